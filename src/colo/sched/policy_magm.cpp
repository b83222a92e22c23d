// magm: most available GPU memory, within RAD-RM's collocation thresholds.

#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

class MagmPolicy : public CollocatingPolicy {
 public:
  using CollocatingPolicy::CollocatingPolicy;
  std::string name() const override { return "magm"; }
  double score(const JobRequest&, const GpuView& gpu) const override {
    return static_cast<double>(gpu.mem_free_bytes);
  }
};

}  // namespace

std::unique_ptr<Policy> make_magm_policy(const Thresholds& t) { return std::make_unique<MagmPolicy>(t); }

}  // namespace colo::sched
