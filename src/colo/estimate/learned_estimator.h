#pragma once
// Peak memory predicted from a model summary by small networks trained on
// measured runs (in the manner of GPUMemNet): a regressor of log2(bytes) and
// a classifier into fixed-width memory bins.

#include <memory>
#include <string>
#include <vector>

#include "colo/estimate/device_profile.h"
#include "colo/estimate/estimator.h"

namespace colo::estimate {

// One measured run: its summary and the caching allocator's peak reserved bytes.
struct LearnedSample {
  ModelSummary summary;
  int64_t allocator_peak_bytes = 0;
};

struct LearnedOptions {
  int epochs = 2000;
  int hidden = 64;
  double lr = 3e-3;
  int64_t bin_bytes = int64_t{1} << 30;   // classifier bin width
  uint64_t seed = 0;
};

class LearnedEstimator : public Estimator {
 public:
  // Trains both networks; throws std::invalid_argument for fewer than 8 samples.
  static std::shared_ptr<LearnedEstimator> fit(const std::vector<LearnedSample>& samples,
                                               const LearnedOptions& options,
                                               DeviceProfile profile = default_device_profile());
  // Reads a file written by save(); throws InputError naming it when it is not one.
  static std::shared_ptr<LearnedEstimator> load(const std::string& path,
                                                DeviceProfile profile = default_device_profile());
  void save(const std::string& path) const;

  std::string name() const override { return "learned"; }
  // Uses request.summary, else summarises request.spec.
  MemoryEstimate estimate(const EstimateRequest& request) override;

  // The regressor's allocator peak, context not included.
  int64_t predict_allocator_bytes(const ModelSummary& summary) const;
  // The classifier's bin: the peak lies in [bin * bin_bytes, (bin + 1) * bin_bytes).
  int64_t predict_bin(const ModelSummary& summary) const;
  int64_t bin_bytes() const { return bin_bytes_; }

  struct Networks;
  LearnedEstimator(std::shared_ptr<Networks> nets, int64_t bin_bytes, DeviceProfile profile);

 private:
  std::shared_ptr<Networks> nets_;
  int64_t bin_bytes_;
  DeviceProfile profile_;
};

}  // namespace colo::estimate
