// Pausing process groups, and the watchdog that continues them when colo
// cannot.

#include "colo/core/paused_groups.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "colo/core/process_tree.h"
#include "colo/core/subprocess.h"

namespace colo {
namespace {

// The process's state letter from /proc (T: stopped), or '?' once it is gone.
char state_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return '?';
  size_t close = line.rfind(')');
  return close + 2 < line.size() ? line[close + 2] : '?';
}

// Waits up to `timeout_s` for `pid` to leave (or, with `stopped`, to enter) the stopped state.
bool becomes(pid_t pid, bool stopped, double timeout_s) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    if ((state_of(pid) == 'T') == stopped) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

struct Sleeper {
  ChildProcess child{{"sleep", "60"}, {}};
  ~Sleeper() {
    ::kill(-child.pid(), SIGCONT);
    child.terminate(1);
  }
};

TEST(PausedGroups, StopsAGroupUntilResumed) {
  Sleeper job;
  ASSERT_TRUE(becomes(job.child.pid(), false, 5));
  {
    PausedGroups pause({job.child.pid()}, 30);
    EXPECT_TRUE(becomes(job.child.pid(), true, 5));
    pause.resume();
    EXPECT_TRUE(becomes(job.child.pid(), false, 5));
    PausedGroups again({job.child.pid()}, 30);
    EXPECT_TRUE(becomes(job.child.pid(), true, 5));
  }
  EXPECT_TRUE(becomes(job.child.pid(), false, 5)) << "dropped: it runs on";
}

// A forked process that pauses `job`'s group and then waits to be ended,
// in a group of its own when `own_group` (as colo run started from a
// shell); returned once the pause holds.
pid_t fork_pauser(const Sleeper& job, bool own_group) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  pid_t pauser = ::fork();
  if (pauser == 0) {
    if (own_group) ::setpgid(0, 0);
    PausedGroups pause({job.child.pid()}, 30);
    char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  if (pauser < 0 || ::read(ready[0], &byte, 1) != 1) pauser = -1;
  ::close(ready[0]);
  return pauser;
}

TEST(PausedGroups, ItsWatchdogContinuesTheGroupWhenThePauserIsKilled) {
  Sleeper job;
  pid_t pauser = fork_pauser(job, false);
  ASSERT_GT(pauser, 0);
  EXPECT_TRUE(becomes(job.child.pid(), true, 5));
  ::kill(pauser, SIGKILL);
  ::waitpid(pauser, nullptr, 0);
  EXPECT_TRUE(becomes(job.child.pid(), false, 5)) << "kill -9 of colo leaves no job stopped";
}

TEST(PausedGroups, AnInterruptToThePausersProcessGroupLeavesItsWatchdogToContinueTheGroup) {
  Sleeper job;
  pid_t pauser = fork_pauser(job, true);  // its own group, the watchdog in it
  ASSERT_GT(pauser, 0);
  EXPECT_TRUE(becomes(job.child.pid(), true, 5));
  ::kill(-pauser, SIGINT);  // Ctrl-C: the whole group
  ::waitpid(pauser, nullptr, 0);
  EXPECT_TRUE(becomes(job.child.pid(), false, 5)) << "the watchdog outlived the interrupt and continued the job";
}

TEST(PausedGroups, ItsWatchdogContinuesTheGroupPastTheLimit) {
  Sleeper job;
  PausedGroups pause({job.child.pid()}, 0.3);
  EXPECT_TRUE(becomes(job.child.pid(), true, 5));
  EXPECT_TRUE(becomes(job.child.pid(), false, 5)) << "a pauser that stalls past its limit";
}

// A job's worker in a session of its own (setsid, as a launcher may start
// one) is outside the job's group, which a signal to the group misses: it
// is found, paused and continued with the job. A plain job has none.
TEST(PausedGroups, AWorkerOutsideTheJobsGroupIsFoundPausedAndContinuedWithIt) {
  Sleeper plain;
  EXPECT_TRUE(descendants_outside_group(plain.child.pid()).empty());
  ChildProcess job({"sh", "-c", "setsid sleep 60 & wait"}, {});
  std::vector<pid_t> outside;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (outside.empty() && std::chrono::steady_clock::now() < until) {
    outside = descendants_outside_group(job.pid());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(outside.size(), 1u);
  {
    PausedGroups pause({job.pid()}, 30, outside);
    EXPECT_TRUE(becomes(outside[0], true, 5)) << "the worker in its own session";
    EXPECT_TRUE(becomes(job.pid(), true, 5));
  }
  EXPECT_TRUE(becomes(outside[0], false, 5)) << "continued with the job";
  EXPECT_TRUE(becomes(job.pid(), false, 5));
  ::kill(outside[0], SIGKILL);
  job.terminate(1);
}

}  // namespace
}  // namespace colo
