#pragma once
// estimate::Estimator: how many bytes of GPU memory a job needs at its peak.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "colo/estimate/model_summary.h"
#include "colo/estimate/python_model.h"
#include "colo/train/train_spec.h"

namespace colo::estimate {

// Where an estimate's bytes go. Every part is in bytes; `total()` is what a
// process running the job holds at its peak (context included).
struct MemoryBreakdown {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;     // optimiser state (momentum, Adam moments)
  int64_t activations = 0;   // tensors saved for backward and transients at the peak
  int64_t data = 0;          // the input batch (or the whole data set when held on the device)
  int64_t workspace = 0;     // cuBLAS/cuDNN workspaces and the caching allocator's rounding
  int64_t context = 0;       // CUDA context of the device (driver, kernels)
  int64_t total() const {
    return parameters + gradients + optimizer + activations + data + workspace + context;
  }
};

// One estimator's answer. `known` is false when the estimator cannot say
// (no GPU to probe, no history, a job it does not understand); `reason`
// then says why.
struct MemoryEstimate {
  std::string estimator;
  bool known = false;
  int64_t bytes = 0;          // peak process footprint (context included)
  int64_t uncertainty = 0;    // one-sided: the estimator expects the truth below bytes + uncertainty
  std::optional<MemoryBreakdown> breakdown;  // analytical and probe only
  std::string reason;
  std::string peak_phase;                    // analytical: "forward", "backward", "optimizer" or "evaluation"
  std::vector<std::string> unmodelled_ops;   // analytical: autograd ops without a rule (assumed to save all)
  bool transient = false;                    // unknown for now: another attempt may tell (it ran out of time)

  // The estimate's high bound, bytes + uncertainty: what the scheduler
  // places a job by, so that an estimate that errs low within its stated
  // uncertainty still fits.
  int64_t bytes_high() const { return bytes + uncertainty; }

  static MemoryEstimate unknown(std::string estimator, std::string reason);
};

// What a job says about itself. Any part may be absent; each estimator uses
// what it understands.
struct EstimateRequest {
  std::optional<train::TrainSpec> spec;       // a colo training spec
  std::optional<ModelSummary> summary;        // a model summary (plain PyTorch jobs)
  std::optional<PythonModelSource> python_model;  // a Python job's model (python_model_estimator.h)
  std::vector<std::string> command;           // the job's argv, for history
  std::string workdir = ".";                  // where the job runs (relative paths, Python imports)
};

class Estimator {
 public:
  virtual ~Estimator() = default;
  virtual std::string name() const = 0;
  // Never throws for a job it cannot estimate: returns MemoryEstimate::unknown.
  virtual MemoryEstimate estimate(const EstimateRequest& request) = 0;
};

using EstimatorPtr = std::shared_ptr<Estimator>;

}  // namespace colo::estimate
