// A process that forks children while its other threads ran BLAS (colo
// run's background estimates) must not hang in fork(): OpenBLAS's fork
// handler joins its sleeping worker threads (keep_blas_on_calling_threads).

#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "colo/core/subprocess.h"

namespace colo {
namespace {

// In a child, so that a hang is a failure and not a stuck test: BLAS in
// bursts in one thread while the main thread forks 200 children.
// Returns the child's exit code, or -1 when it was still running after 60 s.
int forks_after_blas_in_another_thread(bool keep_on_calling_threads) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (keep_on_calling_threads) keep_blas_on_calling_threads();
    std::atomic<bool> forking{true};
    std::thread estimate([&forking] {  // BLAS in bursts with pauses, as estimates come and go
      at::Tensor a = at::randn({256, 256});
      while (forking) {
        for (int i = 0; i < 5; ++i) a = at::mm(a, a).tanh();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    for (int i = 0; i < 200; ++i) {
      ChildProcess child({"/bin/true"}, {}, "", false, false);
      child.wait();
    }
    forking = false;
    estimate.join();
    ::_exit(0);
  }
  for (int waited_ms = 0; waited_ms < 60000; waited_ms += 50) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

TEST(ForkAfterBlas, AProcessThatKeepsBlasOnItsCallingThreadsForksWithoutHanging) {
  using GetThreads = int (*)();
  auto get_threads = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!get_threads) GTEST_SKIP() << "this LibTorch's BLAS is not OpenBLAS";
  EXPECT_EQ(forks_after_blas_in_another_thread(true), 0);
}

}  // namespace
}  // namespace colo
