#include "colo/estimate/analytical_estimator.h"

#include <cmath>

#include "colo/core/error.h"
#include "colo/estimate/job_model.h"

namespace colo::estimate {

MemoryEstimate MemoryEstimate::unknown(std::string estimator, std::string reason) {
  MemoryEstimate e;
  e.estimator = std::move(estimator);
  e.reason = std::move(reason);
  return e;
}

AnalyticalEstimator::AnalyticalEstimator(DeviceProfile profile, int64_t array_models)
    : profile_(std::move(profile)), array_models_(array_models) {}

MemoryEstimate analytical_estimate(const JobModel& job, const DeviceProfile& profile) {
  StepConfig step = job.step;
  step.gemm_workspace_bytes = profile.gemm_workspace_bytes();
  SimulatedPeak peak = simulate_training(job.graph, step, &profile.conv_workspace, &profile.conv_workspace_half);
  const double factor = profile.fragmentation_of(job.model_name, peak.phase);
  const auto reserved = static_cast<int64_t>(std::llround(factor * static_cast<double>(peak.peak_reserved)));
  MemoryBreakdown b;
  b.parameters = peak.parameters;
  b.gradients = peak.gradients;
  b.optimizer = peak.optimizer;
  b.activations = peak.activations;
  b.data = peak.data;
  // Library workspaces (less cuBLAS's, which the replay took), a
  // convolution's workspace at the peak, the allocator's rounding and its
  // cached-but-free blocks count as workspace.
  b.workspace = profile.library_workspace_bytes - peak.gemm_workspaces * step.gemm_workspace_bytes +
                peak.workspace + (reserved - peak.peak_allocated);
  b.context = profile.context_bytes;
  MemoryEstimate e;
  e.estimator = "analytical";
  e.known = true;
  e.breakdown = b;
  e.bytes = b.total();
  // Unmodelled ops were assumed to keep everything: the answer errs high.
  e.uncertainty = (e.bytes - b.context) / 10;
  e.peak_phase = peak.phase;
  e.unmodelled_ops = job.graph.unmodelled;
  if (!job.graph.unmodelled.empty()) {
    e.reason = "ops without a rule (assumed to save inputs and outputs):";
    for (const auto& n : job.graph.unmodelled) e.reason += " " + n;
  } else {
    e.reason = "peak in " + peak.phase;
  }
  return e;
}

MemoryEstimate AnalyticalEstimator::estimate(const EstimateRequest& request) {
  if (!request.spec) return MemoryEstimate::unknown(name(), "needs a colo training spec");
  try {
    return analytical_estimate(array_models_ > 1 ? describe_array_job(*request.spec, array_models_)
                                                 : describe_job(*request.spec),
                               profile_);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    return MemoryEstimate::unknown(name(), e.what());
  }
}

}  // namespace colo::estimate
