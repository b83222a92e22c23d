#pragma once
// Fills in the memory need of submitted jobs that did not state one.

#include <vector>

#include "colo/sched/job_spec.h"
#include "colo/sched/store.h"

namespace colo::cli {

// For each job without `mem`: a `colo train SPEC.toml` command gets the
// analytical estimate of its spec; any command that completed before in
// `history` gets its largest measured peak; either with a 10% margin. Jobs
// colo cannot estimate stay unknown (a note on stderr says why).
void fill_memory_estimates(std::vector<sched::JobSpec>& specs, const sched::JobStore* history);

}  // namespace colo::cli
