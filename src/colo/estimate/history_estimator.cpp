#include "colo/estimate/history_estimator.h"

#include <algorithm>

namespace colo::estimate {

HistoryEstimator::HistoryEstimator(std::vector<PastRun> runs) : runs_(std::move(runs)) {}

MemoryEstimate HistoryEstimator::estimate(const EstimateRequest& request) {
  if (request.command.empty()) return MemoryEstimate::unknown(name(), "the job has no command");
  int64_t high = -1, low = INT64_MAX, count = 0;
  for (const PastRun& run : runs_) {
    if (run.command != request.command || run.peak_bytes <= 0) continue;
    high = std::max(high, run.peak_bytes);
    low = std::min(low, run.peak_bytes);
    ++count;
  }
  if (count == 0) return MemoryEstimate::unknown(name(), "no measured run of this command");
  MemoryEstimate e;
  e.estimator = name();
  e.known = true;
  e.bytes = high;
  e.uncertainty = high - low;
  e.reason = "largest of " + std::to_string(count) + " measured run(s)";
  return e;
}

}  // namespace colo::estimate
