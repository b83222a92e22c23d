#pragma once
// A completed job's command and measured peak: what the history estimator
// learns from. A plain struct (no LibTorch), so that job admission's
// callers need not include the estimators.

#include <cstdint>
#include <string>
#include <vector>

namespace colo::estimate {

struct PastRun {
  std::vector<std::string> command;
  int64_t peak_bytes = 0;  // the process's measured peak footprint
};

}  // namespace colo::estimate
