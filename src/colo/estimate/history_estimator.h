#pragma once
// Peak memory measured when the same command ran before.

#include <cstdint>
#include <string>
#include <vector>

#include "colo/estimate/estimator.h"

namespace colo::estimate {

struct PastRun {
  std::vector<std::string> command;
  int64_t peak_bytes = 0;  // the process's measured peak footprint
};

class HistoryEstimator : public Estimator {
 public:
  explicit HistoryEstimator(std::vector<PastRun> runs);
  std::string name() const override { return "history"; }
  // The largest peak among past runs of exactly the request's command, with
  // their spread as the uncertainty; unknown when it never ran.
  MemoryEstimate estimate(const EstimateRequest& request) override;

 private:
  std::vector<PastRun> runs_;
};

}  // namespace colo::estimate
