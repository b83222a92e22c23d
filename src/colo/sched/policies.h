#pragma once
// Factories of the built-in policies, one file each (policy_<name>.cpp).

#include <memory>

#include "colo/sched/policy.h"

namespace colo::sched {

std::unique_ptr<Policy> make_exclusive_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_round_robin_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_magm_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_lug_policy(const Thresholds& thresholds);
std::unique_ptr<Policy> make_best_fit_policy(const Thresholds& thresholds);

}  // namespace colo::sched
