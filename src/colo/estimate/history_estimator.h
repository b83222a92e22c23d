#pragma once
// Peak memory measured when the same command ran before.

#include <cstdint>
#include <string>
#include <vector>

#include "colo/estimate/estimator.h"
#include "colo/estimate/past_run.h"

namespace colo::estimate {

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
