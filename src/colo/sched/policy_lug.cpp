// lug: least utilised GPU by SM activity, within RAD-RM's collocation thresholds.

#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

class LugPolicy : public Policy {
 public:
  explicit LugPolicy(Thresholds t) : thresholds_(t) {}
  std::string name() const override { return "lug"; }
  bool filter(const JobRequest& job, const GpuView& gpu) const override {
    return passes_collocation_thresholds(job, gpu, thresholds_);
  }
  double score(const JobRequest&, const GpuView& gpu) const override { return -gpu.sm_activity; }

 private:
  Thresholds thresholds_;
};

}  // namespace

std::unique_ptr<Policy> make_lug_policy(const Thresholds& t) { return std::make_unique<LugPolicy>(t); }

}  // namespace colo::sched
