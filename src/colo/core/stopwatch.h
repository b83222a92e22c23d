#pragma once
// Monotonic wall-clock timing in seconds.

#include <chrono>

namespace colo {

// Seconds since construction or the last restart(), from a monotonic clock.
class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void restart() { start_ = Clock::now(); }
  double elapsed_s() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

}  // namespace colo
