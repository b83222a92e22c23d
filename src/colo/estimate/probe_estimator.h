#pragma once
// Peak memory measured by running the job's first training steps on the GPU.

#include "colo/estimate/device_profile.h"
#include "colo/estimate/estimator.h"

namespace colo::estimate {

class ProbeEstimator : public Estimator {
 public:
  // `device` is "cuda" or "cuda:N". The CUDA context comes from NVML when it
  // reports this process, else from `profile`.
  explicit ProbeEstimator(std::string device = "cuda", DeviceProfile profile = default_device_profile());
  std::string name() const override { return "probe"; }
  // Builds the spec's model on the device, runs two training steps on random
  // data of the spec's shape and batch (the second one has optimiser state),
  // then one no-grad forward at the evaluation batch, and reads the caching
  // allocator's peak. Releases everything it allocated. Unknown without a
  // CUDA device, without a spec, or when the probe itself runs out of memory.
  MemoryEstimate estimate(const EstimateRequest& request) override;

 private:
  std::string device_;
  DeviceProfile profile_;
};

// The CUDA context this process holds on `cuda_index`, from NVML (per-process
// memory less what the caching allocator reserved); nullopt when unknown.
std::optional<int64_t> measured_context_bytes(int cuda_index);

}  // namespace colo::estimate
