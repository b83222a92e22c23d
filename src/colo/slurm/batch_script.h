#pragma once
// A colo job as a Slurm batch job: what it asks Slurm for, and the script
// sbatch runs (which hands the job to `colo slurm exec` inside the allocation).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "colo/sched/job_spec.h"

namespace colo::slurm {

struct SubmitOptions {
  std::string colo_path;       // the colo executable the script runs (absolute)
  std::string state_dir;       // colo's records of these jobs (absolute)
  int64_t shard_bytes = 0;     // GPU memory per shard
  int shards_per_gpu = 0;      // shards of one GPU (a request above it can never start)
  std::string partition;       // "" = the cluster's default
  int max_retries = 3;         // OOM retries before the job stays failed
  std::string recovery = "peak-margin";  // "peak-margin" or "alone" (sched/recovery.h)
};

// What one job asks Slurm for.
struct GresRequest {
  std::string gres;            // "shard:7" or "gpu:1"
  int shards = 0;              // 0 when whole GPUs are asked for
};

// The request for a job of `gpus` GPUs needing `mem_bytes` on each:
// shards of one GPU for a one-GPU job of known size; whole GPUs for a job
// of unknown size (it runs alone, and its peak is measured) or of several
// GPUs (gang-placed). Throws std::invalid_argument when the memory needs
// more shards than one GPU has.
GresRequest gres_request(int gpus, std::optional<int64_t> mem_bytes, const SubmitOptions& options);

struct BatchJob {
  std::string name;
  GresRequest request;
  std::optional<int64_t> mem_bytes;
  std::optional<std::pair<int, int>> array;  // a Slurm job array over these indices
  std::string script;                        // the whole batch script
};

// The batch job for `spec` (not expanded: an array stays one Slurm job
// array). Its script sets the working directory, environment and output
// file, and runs `colo slurm exec` with the job's memory and recovery rule.
BatchJob plan_batch_job(const sched::JobSpec& spec, const SubmitOptions& options);

}  // namespace colo::slurm
