#pragma once
// `colo slurm exec -- CMD`: what runs a colo job inside its Slurm allocation.
// It joins the node's MPS daemon for its GPUs with the job's pinned-memory
// limit, runs the command, measures its peak memory and energy share, tells
// an out-of-memory death from other failures, and resubmits an OOM death
// with more memory until its retries run out. Every attempt is recorded in
// the state directory and in the Slurm job's Comment.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace colo::slurm {

struct ExecOptions {
  std::string state_dir;
  std::string name;
  int gpus = 1;
  std::optional<int64_t> mem_bytes;   // per GPU; nullopt: unknown (the job runs alone, no limit)
  int64_t shard_bytes = 0;
  int shards_per_gpu = 0;             // caps a retry's request at one GPU's shards
  int max_retries = 3;
  std::string recovery = "peak-margin";
  std::vector<std::string> command;
  std::string mps_control = "nvidia-cuda-mps-control";
  std::string mps_root;               // "" = $TMPDIR/colo-slurm-mps-UID
  bool use_mps = true;                // false: run without MPS even where it exists
  double sample_interval_s = 1.0;
};

// What a job's Slurm environment says about it (SLURM_JOB_ID,
// SLURM_ARRAY_JOB_ID/TASK_ID, SLURMD_NODENAME, CUDA_VISIBLE_DEVICES) and
// what colo's own retries set (COLO_SLURM_ATTEMPT, COLO_SLURM_RETRY_OF,
// COLO_SLURM_MEM).
struct AllocationEnv {
  std::string job_id;        // "123" or "123_4"
  std::string array_task;    // "" or "4"
  std::string node;
  std::string gpus;          // CUDA_VISIBLE_DEVICES
  int attempt = 1;
  std::string retry_of;
  std::optional<int64_t> mem_override;
};

// Reads it from this process's environment. Throws InputError when
// SLURM_JOB_ID is missing (colo slurm exec runs only inside an allocation).
AllocationEnv allocation_from_environment();

// The memory a retry asks for after an OOM death of `attempt` under
// `mem_bytes` with measured `peak_bytes`: nullopt means a whole GPU alone
// (RAD-RM's rule, or when the need outgrows one GPU's shards).
std::optional<int64_t> retry_memory(const ExecOptions& options, int attempt, std::optional<int64_t> mem_bytes,
                                    std::optional<int64_t> peak_bytes);

// Runs the job; returns the exit status for Slurm (the command's own).
int run_in_allocation(const ExecOptions& options, const AllocationEnv& allocation);

}  // namespace colo::slurm
