#pragma once
// What a waiting job asks of the GPUs, built by one rule in the runner and
// the simulator: what it declares, else what earlier jobs of its command or
// model taught (job_history.h); after an OOM death, its retry's request
// (recovery.h).

#include <cstdint>
#include <optional>

#include "colo/sched/job_history.h"
#include "colo/sched/policy.h"
#include "colo/sched/recovery.h"

namespace colo::sched {

// What the scheduler knows of one waiting job.
struct RequestFacts {
  int64_t id = 0;
  std::optional<int64_t> mem_bytes;  // stated, or estimated when it was submitted
  double sm_share = 0;               // stated; 0 = none
  int gpus = 1;
  JobKeys keys;
  int oom_deaths = 0;                // > 0: it waits for its retry after this many OOM deaths
  int64_t peak_bytes = 0;            // the largest peak seen of it before it died
};

// The request: a share it does not state comes from history (same command,
// else same model); memory it does not state is the largest peak a job of
// its command reached plus JobHistory::kPeakMargin; failing both it is of
// unknown memory, and `provisional` (the caller's rule: real GPUs that show
// each process's memory, a collocating mode) lets it start beside others
// while its peak is measured. A job waiting after an OOM death asks what
// recovery_request says for its attempt.
JobRequest build_request(const RequestFacts& job, const JobHistory& history, const RecoveryOptions& recovery,
                         bool provisional);

}  // namespace colo::sched
