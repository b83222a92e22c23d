// best-fit (colo's own): the memory estimate and the SM-activity headroom
// together. A GPU passes when the job's memory fits with the margin and its
// SM share fits under the activity ceiling; among those, a GPU that already
// has jobs beats an empty one (fill before opening another), then the
// tightest memory fit wins, so large holes stay free for large jobs.

#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

class BestFitPolicy : public CollocatingPolicy {
 public:
  using CollocatingPolicy::CollocatingPolicy;
  std::string name() const override { return "best-fit"; }
  // A share not known yet counts as nothing: the GPU then stays closed
  // while the job settles and its share is measured (gpu_ledger.h).
  Fit filter(const JobRequest& job, const GpuView& gpu) const override {
    Fit fit = CollocatingPolicy::filter(job, gpu);
    if (!fit || gpu.jobs == 0) return fit;
    if (gpu.sm_activity + job.sm_share > 1.0 + 1e-9) {
      return Fit::no(Fit::Why::kSmHeadroom, job.sm_share, gpu.sm_activity);
    }
    return Fit::yes();
  }
  double score(const JobRequest& job, const GpuView& gpu) const override {
    double total = static_cast<double>(std::max<int64_t>(gpu.mem_total_bytes, 1));
    double left = static_cast<double>(gpu.mem_free_bytes - job.mem_bytes.value_or(0)) / total;
    return (gpu.jobs > 0 ? 2.0 : 0.0) - left;
  }
};

}  // namespace

std::unique_ptr<Policy> make_best_fit_policy(const Thresholds& t) { return std::make_unique<BestFitPolicy>(t); }

}  // namespace colo::sched
