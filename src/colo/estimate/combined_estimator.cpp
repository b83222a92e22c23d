#include "colo/estimate/combined_estimator.h"

#include <cmath>

namespace colo::estimate {

CombinedEstimator::CombinedEstimator(std::vector<EstimatorPtr> in_trust_order, double margin)
    : estimators_(std::move(in_trust_order)), margin_(margin) {}

MemoryEstimate CombinedEstimator::estimate(const EstimateRequest& request) {
  std::string reasons;
  for (const EstimatorPtr& estimator : estimators_) {
    MemoryEstimate e = estimator->estimate(request);
    if (e.known) {
      e.bytes += static_cast<int64_t>(std::ceil(static_cast<double>(e.bytes) * margin_));
      e.reason = e.estimator + ", plus " + std::to_string(static_cast<int>(std::lround(margin_ * 100))) +
                 "% margin" + (e.reason.empty() ? "" : " (" + e.reason + ")");
      e.estimator = name();
      return e;
    }
    reasons += (reasons.empty() ? "" : "; ") + e.estimator + ": " + e.reason;
  }
  return MemoryEstimate::unknown(name(), reasons.empty() ? "no estimator" : reasons);
}

}  // namespace colo::estimate
