#include "colo/core/interrupt_cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace colo {
namespace {

// Runs `body` in a forked process, where colo's handlers are not yet
// installed, which then exits 0; returns its wait status (and its pid).
int status_of_fresh_process(const std::function<void()>& body, pid_t* pid = nullptr) {
  pid_t child = ::fork();
  if (child < 0) {
    ADD_FAILURE() << "fork failed";
    return -1;
  }
  if (child == 0) {
    body();
    ::_exit(0);
  }
  if (pid) *pid = child;
  int status = 0;
  if (::waitpid(child, &status, 0) != child) ADD_FAILURE() << "waitpid failed";
  return status;
}

// A child process registers a slow cleanup, is interrupted, and goes on to
// its ordinary ending (unregistering the cleanup and exiting 0) while the
// cleanup still runs: it must end by the signal, with the cleanup done.
TEST(InterruptCleanup, TheOrdinaryEndingWaitsForTheInterruptsCleanupsAndTheProcessEndsByTheSignal) {
  testing::TempDir dir;
  const std::string marker = dir.file("cleaned");
  int status = status_of_fresh_process([marker] {
    int id = add_interrupt_cleanup([marker] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::ofstream(marker) << "done";
    });
    ::raise(SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    remove_interrupt_cleanup(id);
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT)
      << "exited " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << " before the cleanup ended";
  std::ifstream cleaned(marker);
  std::string text;
  cleaned >> text;
  EXPECT_EQ(text, "done");
}

// A user whose colo was stopped by something else learns what: the signal
// and the sender's pid, on one line.
TEST(InterruptCleanup, TheStopIsReportedWithTheSignalAndItsSender) {
  testing::TempDir dir;
  const std::string err = dir.file("stderr");
  pid_t child = 0;
  int status = status_of_fresh_process(
      [err] {
        int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ::dup2(fd, STDERR_FILENO) < 0) ::_exit(100);
        add_interrupt_cleanup([] {});
        ::raise(SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(5));
      },
      &child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  std::ifstream in(err);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "colo: " + std::string(::strsignal(SIGTERM)) + " from pid " + std::to_string(child) +
                      " (this process): stopping");
}

// Every process colo starts would otherwise hold the watcher's pipe: a child
// writing to that descriptor number by mistake could stop colo with any
// signal, and the pipe would outlive colo in daemons it started (MPS).
TEST(InterruptCleanup, ProcessesStartedLaterDoNotInheritTheSignalPipe) {
  // The pipes open in this process (fds above stderr); with_cloexec: only those closed on exec.
  auto pipes = [](bool with_cloexec) {
    std::set<int> found;
    DIR* fds = ::opendir("/proc/self/fd");
    if (fds == nullptr) return found;
    while (dirent* entry = ::readdir(fds)) {
      int fd = std::atoi(entry->d_name);
      struct stat st {};
      if (fd <= 2 || fd == ::dirfd(fds) || ::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
      if (!with_cloexec || (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0) found.insert(fd);
    }
    ::closedir(fds);
    return found;
  };
  int status = status_of_fresh_process([pipes] {
    std::set<int> before = pipes(false);
    add_interrupt_cleanup([] {});
    std::set<int> opened, closed_on_exec = pipes(true);
    for (int fd : pipes(false)) {
      if (!before.count(fd)) opened.insert(fd);
    }
    if (opened.size() != 2) ::_exit(100);  // not the watcher's pipe: the test cannot judge
    for (int fd : opened) {
      if (!closed_on_exec.count(fd)) ::_exit(1);
    }
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a started process would inherit the pipe; 100: no pipe was opened";
}

}  // namespace
}  // namespace colo
