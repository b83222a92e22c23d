#pragma once
// Wall-clock time in seconds: monotonic intervals and the Unix time of now.

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

// Seconds since the Unix epoch (the system clock: comparable across
// processes and restarts, unlike Stopwatch).
inline double unix_time_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace colo
