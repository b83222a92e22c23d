#pragma once
// What a job that died of GPU out-of-memory asks for when it is retried.

#include <cstdint>
#include <string>

#include "colo/sched/job.h"
#include "colo/sched/policy.h"

namespace colo::sched {

enum class RecoveryRule {
  kAlone,       // RAD-RM's rule: the retry runs on a GPU alone
  kPeakMargin,  // retry where its last observed peak plus a growing margin is free
};

struct RecoveryOptions {
  RecoveryRule rule = RecoveryRule::kAlone;
  int max_retries = 3;           // OOM deaths beyond this make the job FAILED
  double margin_fraction = 0.10; // kPeakMargin: margin = peak x fraction x attempt
};

// Parses "alone" or "peak-margin"; throws std::invalid_argument otherwise.
RecoveryRule recovery_rule_from_string(const std::string& name);

// The state of a job after its `deaths`-th OOM death: OUT_OF_MEMORY (it
// waits in the recovery queue) while deaths <= max_retries, else FAILED.
JobState state_after_oom_death(int deaths, const RecoveryOptions& options);

// The request for retry `attempt` (1 = first retry) of `original`, whose
// largest observed peak was `observed_peak_bytes`. Retries are served before
// the normal queue (the simulator and the daemon both keep that order).
JobRequest recovery_request(const JobRequest& original, const RecoveryOptions& options, int attempt,
                            int64_t observed_peak_bytes);

}  // namespace colo::sched
