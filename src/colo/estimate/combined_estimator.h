#pragma once
// Several estimators in order of trust, and a safety margin on top.

#include <vector>

#include "colo/estimate/estimator.h"

namespace colo::estimate {

class CombinedEstimator : public Estimator {
 public:
  // `margin` is a fraction (0.1 = 10%) added to the first known answer.
  CombinedEstimator(std::vector<EstimatorPtr> in_trust_order, double margin);
  std::string name() const override { return "combined"; }
  // The first estimator that knows, its bytes plus the margin; the reasons of
  // those that did not know when none does.
  MemoryEstimate estimate(const EstimateRequest& request) override;

 private:
  std::vector<EstimatorPtr> estimators_;
  double margin_;
};

}  // namespace colo::estimate
