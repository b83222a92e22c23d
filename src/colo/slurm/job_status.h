#pragma once
// `colo slurm status`: Slurm's queue joined with colo's records, one row per
// colo job (an array task is a job), following each job through its OOM
// retries to its latest attempt.

#include <optional>
#include <string>
#include <vector>

#include "colo/slurm/slurm_client.h"
#include "colo/slurm/state_dir.h"

namespace colo::slurm {

struct JobStatus {
  std::string first_id;                 // the Slurm id of its first attempt
  std::string job_id;                   // of its latest attempt
  std::string name;
  std::string state;                    // Slurm's while queued or running, else colo's record's; LOST when neither knows it
  std::string gres;                     // what the latest attempt asked for
  std::optional<int64_t> mem_bytes;     // its memory limit (nullopt: a whole GPU)
  std::optional<int64_t> peak_bytes;    // the largest over its attempts
  double energy_j = 0;                  // over its attempts
  bool energy_known = false;
  int oom_retries = 0;
  std::string reason;                   // why it waits (Slurm's), or why it failed or was retried (colo's)
  std::string node;
};

struct StatusSummary {
  int jobs = 0, completed = 0, failed = 0, pending = 0, running = 0, lost = 0;
  int oom_requeued = 0;                 // OOM deaths that were resubmitted with more memory
  int max_jobs_per_gpu = 0;             // the most attempts whose runs overlapped on one node GPU
};

// Joins the records of `state` with `queue` (the live Slurm queue).
std::vector<JobStatus> job_statuses(const std::vector<SubmittedJob>& submitted,
                                    const std::vector<AttemptRecord>& attempts, const std::vector<QueueRow>& queue);

StatusSummary summarize(const std::vector<JobStatus>& jobs, const std::vector<AttemptRecord>& attempts);

}  // namespace colo::slurm
