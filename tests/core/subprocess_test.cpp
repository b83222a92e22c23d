#include "colo/core/subprocess.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "colo/core/stopwatch.h"

namespace colo {
namespace {

TEST(RunProcess, CapturesOutputExitCodeAndStdin) {
  auto result = run_process({"sh", "-c", "read x; echo got $x; exit 4"}, {}, "hello\n", 5);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.output, "got hello\n");
}

TEST(RunProcess, EnvironmentOverridesAreSeen) {
  auto result = run_process({"sh", "-c", "echo $COLO_TEST_VALUE"}, {{"COLO_TEST_VALUE", "42"}}, "", 5);
  EXPECT_EQ(result.output, "42\n");
}

TEST(RunProcess, KillsAProgramThatOutlivesItsTimeout) {
  Stopwatch clock;
  auto result = run_process({"sleep", "10"}, {}, "", 0.3);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.signal, SIGKILL);
  EXPECT_LT(clock.elapsed_s(), 3.0);
}

TEST(RunProcess, MissingProgramExits127) {
  EXPECT_EQ(run_process({"/nonexistent/program"}, {}, "", 5).exit_code, 127);
}

TEST(ChildProcess, TerminateEndsTheWholeProcessGroup) {
  ChildProcess child({"sh", "-c", "sleep 30 & sleep 30"}, {});
  Stopwatch clock;
  child.terminate(2.0);
  EXPECT_TRUE(child.poll().has_value());
  EXPECT_EQ(exit_code_of(*child.poll()), 128 + SIGTERM);
  EXPECT_LT(clock.elapsed_s(), 3.0);
}

TEST(ChildProcess, AHeldChildRunsOnlyOnceReleased) {
  std::string ran = ::testing::TempDir() + "/colo_held_ran_" + std::to_string(::getpid());
  std::remove(ran.c_str());
  ChildProcess child({"sh", "-c", "touch " + ran}, {}, "", false, /*held=*/true);
  EXPECT_GT(child.pid(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(child.poll().has_value()) << "waiting to be released";
  EXPECT_FALSE(std::ifstream(ran).good());
  child.release();
  EXPECT_EQ(exit_code_of(child.wait()), 0);
  EXPECT_TRUE(std::ifstream(ran).good());
  std::remove(ran.c_str());
}

// A scheduler killed (-9) after starting a job's process but before
// recording it: the process must not run the job behind the store's back.
TEST(ChildProcess, AHeldChildWhoseLauncherIsKilledFirstExitsWithoutRunning) {
  std::string ran = ::testing::TempDir() + "/colo_held_orphan_ran_" + std::to_string(::getpid());
  std::remove(ran.c_str());
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    ::close(report[0]);
    ChildProcess child({"sh", "-c", "touch " + ran}, {}, "", false, /*held=*/true);
    pid_t pid = child.pid();
    if (::write(report[1], &pid, sizeof pid) != sizeof pid) ::_exit(1);
    ::kill(::getpid(), SIGKILL);
  }
  ::close(report[1]);
  pid_t held = 0;
  ASSERT_EQ(::read(report[0], &held, sizeof held), static_cast<ssize_t>(sizeof held));
  ::close(report[0]);
  int status = 0;
  ::waitpid(launcher, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  Stopwatch clock;
  while (process_alive(held) && clock.elapsed_s() < 10) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(process_alive(held));
  EXPECT_FALSE(std::ifstream(ran).good()) << "it ran though never released";
  std::remove(ran.c_str());
}

TEST(ProcessAlive, ReportsLiveAndEndedProcesses) {
  ChildProcess child({"true"}, {});
  pid_t pid = child.pid();
  child.wait();
  EXPECT_FALSE(process_alive(pid));
  EXPECT_TRUE(process_alive(::getpid()));
}

TEST(BelongsToJob, CountsAWorkerThatLeftTheJobsProcessGroup) {
  // The background sleep starts a session of its own, as torchrun's workers do.
  std::string pid_file = ::testing::TempDir() + "/colo_setsid_pid";
  ChildProcess child({"sh", "-c", "setsid sleep 30 & echo $! > " + pid_file + "; wait"}, {});
  uint32_t worker = 0;
  for (int i = 0; i < 100 && worker == 0; ++i) {
    std::ifstream in(pid_file);
    in >> worker;
    if (worker == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(worker, 0u);
  for (int i = 0; i < 100 && process_group_of(worker) != static_cast<int>(worker); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // until setsid has run
  }
  uint32_t leader = static_cast<uint32_t>(child.pid());
  EXPECT_NE(process_group_of(worker), static_cast<int>(leader));
  EXPECT_TRUE(belongs_to_job(worker, leader));
  EXPECT_TRUE(belongs_to_job(leader, leader));
  EXPECT_FALSE(belongs_to_job(static_cast<uint32_t>(::getpid()), leader));
  ::kill(static_cast<pid_t>(worker), SIGKILL);
  child.terminate(2.0);
  std::remove(pid_file.c_str());
}

}  // namespace
}  // namespace colo
