#include "colo/core/start_together.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <utility>

#include "colo/core/files.h"
#include "colo/core/stopwatch.h"

namespace colo {

StartTogether::StartTogether() {
  const char* directory = std::getenv(kStartTogetherVariable);
  const char* count = std::getenv(kStartTogetherCountVariable);
  if (directory == nullptr || count == nullptr) return;
  char* end = nullptr;
  long n = std::strtol(count, &end, 10);
  if (end == count || *end != '\0' || n <= 0) return;
  directory_ = directory;
  count_ = static_cast<int>(n);
  if (const char* timeout = std::getenv(kStartTogetherTimeoutVariable)) {
    double seconds = std::strtod(timeout, &end);
    if (end != timeout && *end == '\0' && seconds >= 0) timeout_s_ = seconds;
  }
}

StartTogether::StartTogether(std::string directory, int count, double timeout_s)
    : directory_(std::move(directory)), count_(count), timeout_s_(timeout_s) {}

double StartTogether::wait() {
  if (done_ || directory_.empty() || count_ <= 0) return 0;
  done_ = true;
  if (!make_directories(directory_).empty()) return 0;
  {
    std::ofstream mark(directory_ + "/" + std::to_string(::getpid()));
    if (!mark) return 0;
  }
  Stopwatch waited;
  while (static_cast<int>(list_directory(directory_).size()) < count_ && waited.elapsed_s() < timeout_s_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return waited.elapsed_s();
}

}  // namespace colo
