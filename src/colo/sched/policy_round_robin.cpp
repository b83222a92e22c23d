// round-robin: the next GPU after the last one used that passes RAD-RM's
// collocation thresholds.

#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

class RoundRobinPolicy : public CollocatingPolicy {
 public:
  using CollocatingPolicy::CollocatingPolicy;
  std::string name() const override { return "round-robin"; }
  // The first index after the last pick scores highest, wrapping around.
  double score(const JobRequest&, const GpuView& gpu) const override {
    int distance = gpu.index - (last_ + 1);
    if (distance < 0) distance += 1 << 20;
    return -static_cast<double>(distance);
  }
  void placed(const JobRequest&, int gpu_index) override { last_ = gpu_index; }

 private:
  int last_ = -1;
};

}  // namespace

std::unique_ptr<Policy> make_round_robin_policy(const Thresholds& t) {
  return std::make_unique<RoundRobinPolicy>(t);
}

}  // namespace colo::sched
