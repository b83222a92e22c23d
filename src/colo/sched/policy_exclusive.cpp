// exclusive: one job per GPU, the lowest free index first.

#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

class ExclusivePolicy : public Policy {
 public:
  std::string name() const override { return "exclusive"; }
  Fit filter(const JobRequest&, const GpuView& gpu) const override {
    return gpu.jobs == 0 ? Fit::yes() : Fit::no(Fit::Why::kExclusiveBusy);
  }
  double score(const JobRequest&, const GpuView&) const override { return 0; }
};

}  // namespace

std::unique_ptr<Policy> make_exclusive_policy(const Thresholds&) { return std::make_unique<ExclusivePolicy>(); }

}  // namespace colo::sched
