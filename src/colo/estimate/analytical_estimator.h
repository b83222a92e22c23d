#pragma once
// Peak memory from the model's recorded graph: parameters, gradients and
// optimiser state by size, activations by replaying the step's allocations
// through a model of the caching allocator, plus the device's context and
// library workspaces.

#include "colo/estimate/device_profile.h"
#include "colo/estimate/estimator.h"

namespace colo::estimate {

class AnalyticalEstimator : public Estimator {
 public:
  // `array_models` > 1 estimates that many copies of the spec's model trained
  // as one fused array (colo sweep).
  explicit AnalyticalEstimator(DeviceProfile profile = default_device_profile(), int64_t array_models = 1);
  std::string name() const override { return "analytical"; }
  // Needs request.spec; unknown for anything else.
  MemoryEstimate estimate(const EstimateRequest& request) override;

 private:
  DeviceProfile profile_;
  int64_t array_models_;
};

// The analytical estimate of an already described job (see job_model.h).
struct JobModel;
MemoryEstimate analytical_estimate(const JobModel& job, const DeviceProfile& profile);

}  // namespace colo::estimate
