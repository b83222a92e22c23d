#pragma once
// The totals of a batch of real jobs (`colo run`, `colo replay`, `colo
// history`): what ended how, energy, and mean wait, run time and JCT.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/sched/store.h"

namespace colo::sched {

struct BatchTotals {
  int completed = 0, failed = 0, oom_events = 0, lost = 0;
  int false_ooms = 0;  // OOM deaths at an MPS limit with room left on the GPU
  double energy_j = 0, wait_s = 0, exec_s = 0, jct_s = 0;  // means over completed jobs
  // Over the completed jobs that have a slowdown (JobRecord::slowdown).
  std::optional<double> mean_slowdown, max_slowdown;

  explicit BatchTotals(const std::vector<JobRecord>& jobs);

  // The summary `colo report` reads, in the form `colo simulate` writes it
  // (mean_slowdown and max_slowdown only when known).
  nlohmann::json to_json(const std::string& policy, const std::string& mode, double wall_s) const;
};

}  // namespace colo::sched
