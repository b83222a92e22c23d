#include "colo/train/progress_line.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace colo::train {

ProgressLine::ProgressLine() {
  const char* forced = std::getenv("COLO_PROGRESS");
  enabled_ = forced ? std::strcmp(forced, "0") != 0 : ::isatty(STDERR_FILENO) == 1;
}

bool ProgressLine::due() const { return enabled_ && (!visible_ || since_update_.elapsed_s() >= 0.25); }

void ProgressLine::show(const std::string& text) {
  if (!due()) return;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  visible_ = true;
  since_update_.restart();
}

void ProgressLine::clear() {
  if (!visible_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  visible_ = false;
}

}  // namespace colo::train
