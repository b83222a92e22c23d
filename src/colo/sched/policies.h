#pragma once
// Factories of the built-in policies, one file each (policy_<name>.cpp).

#include <memory>

#include "colo/sched/policy.h"

namespace colo::sched {

// Base of the policies whose filter is exactly RAD-RM's collocation
// thresholds (round-robin, magm, lug); they differ only in score().
class CollocatingPolicy : public Policy {
 public:
  explicit CollocatingPolicy(Thresholds thresholds) : thresholds_(thresholds) {}
  Fit filter(const JobRequest& job, const GpuView& gpu) const override {
    return collocation_thresholds(job, gpu, thresholds_);
  }

 protected:
  Thresholds thresholds_;
};

std::unique_ptr<Policy> make_exclusive_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_round_robin_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_magm_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_lug_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_best_fit_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_slurm_shard_policy(const Thresholds& thresholds);

}  // namespace colo::sched
