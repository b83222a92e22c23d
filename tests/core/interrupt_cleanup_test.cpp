#include "colo/core/interrupt_cleanup.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace colo {
namespace {

// A child process registers a slow cleanup, is interrupted, and goes on to
// its ordinary ending (unregistering the cleanup and exiting 0) while the
// cleanup still runs: it must end by the signal, with the cleanup done.
TEST(InterruptCleanup, TheOrdinaryEndingWaitsForTheInterruptsCleanupsAndTheProcessEndsByTheSignal) {
  testing::TempDir dir;
  const std::string marker = dir.file("cleaned");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int id = add_interrupt_cleanup([marker] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::ofstream(marker) << "done";
    });
    ::raise(SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    remove_interrupt_cleanup(id);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT)
      << "exited " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << " before the cleanup ended";
  std::ifstream cleaned(marker);
  std::string text;
  cleaned >> text;
  EXPECT_EQ(text, "done");
}

}  // namespace
}  // namespace colo
