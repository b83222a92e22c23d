#include "colo/estimate/analytical_estimator.h"

#include "colo/core/error.h"
#include "colo/estimate/job_model.h"

namespace colo::estimate {

MemoryEstimate MemoryEstimate::unknown(std::string estimator, std::string reason) {
  MemoryEstimate e;
  e.estimator = std::move(estimator);
  e.reason = std::move(reason);
  return e;
}

AnalyticalEstimator::AnalyticalEstimator(DeviceProfile profile) : profile_(std::move(profile)) {}

MemoryEstimate analytical_estimate(const JobModel& job, const DeviceProfile& profile) {
  StepConfig step = job.step;
  step.library_workspace_bytes = profile.library_workspace_bytes;
  SimulatedPeak peak = simulate_training(job.graph, step);
  MemoryBreakdown b;
  b.parameters = peak.parameters;
  b.gradients = peak.gradients;
  b.optimizer = peak.optimizer;
  b.activations = peak.activations;
  b.data = peak.data;
  // The allocator's rounding and cached-but-free blocks count as workspace.
  b.workspace = peak.workspace + (peak.peak_reserved - peak.peak_allocated);
  b.context = profile.context_bytes;
  MemoryEstimate e;
  e.estimator = "analytical";
  e.known = true;
  e.breakdown = b;
  e.bytes = b.total();
  // Unmodelled ops were assumed to keep everything: the answer errs high.
  e.uncertainty = (e.bytes - b.context) / 10;
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
    return analytical_estimate(describe_job(*request.spec), profile_);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    return MemoryEstimate::unknown(name(), e.what());
  }
}

}  // namespace colo::estimate
