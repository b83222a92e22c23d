// magm: most available GPU memory, within RAD-RM's collocation thresholds.

#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

class MagmPolicy : public Policy {
 public:
  explicit MagmPolicy(Thresholds t) : thresholds_(t) {}
  std::string name() const override { return "magm"; }
  bool filter(const JobRequest& job, const GpuView& gpu) const override {
    return passes_collocation_thresholds(job, gpu, thresholds_);
  }
  double score(const JobRequest&, const GpuView& gpu) const override {
    return static_cast<double>(gpu.mem_free_bytes);
  }

 private:
  Thresholds thresholds_;
};

}  // namespace

std::unique_ptr<Policy> make_magm_policy(const Thresholds& t) { return std::make_unique<MagmPolicy>(t); }

}  // namespace colo::sched
