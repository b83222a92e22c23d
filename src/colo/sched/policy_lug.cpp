// lug: least utilised GPU by SM activity, within RAD-RM's collocation thresholds.

#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

class LugPolicy : public CollocatingPolicy {
 public:
  using CollocatingPolicy::CollocatingPolicy;
  std::string name() const override { return "lug"; }
  double score(const JobRequest&, const GpuView& gpu) const override { return -gpu.sm_activity; }
};

}  // namespace

std::unique_ptr<Policy> make_lug_policy(const Thresholds& t) { return std::make_unique<LugPolicy>(t); }

}  // namespace colo::sched
