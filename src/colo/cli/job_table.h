#pragma once
// The job table `colo run`, `colo replay` and `colo queue` print (like
// squeue: state, GPU, tries, run time, peak memory, exit, and the reason a
// job waits or ended).

#include <vector>

#include <nlohmann/json.hpp>

#include "colo/sched/store.h"

namespace colo::cli {

void print_jobs(const std::vector<sched::JobRecord>& jobs);

// The fields of a record the table shows, from colod's JSON (sched::to_json).
sched::JobRecord record_from_json(const nlohmann::json& j);

}  // namespace colo::cli
