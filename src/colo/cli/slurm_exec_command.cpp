// `colo slurm exec -- CMD`: the wrapper each colo batch script runs inside
// its allocation (slurm/in_allocation.h).

#include "colo/cli/slurm_subcommands.h"
#include "colo/core/error.h"
#include "colo/slurm/in_allocation.h"

namespace colo::cli {

void add_slurm_exec(CLI::App& slurm, int& exit_code) {
  auto args = std::make_shared<slurm::ExecOptions>();
  auto mem = std::make_shared<int64_t>(0);
  auto no_mps = std::make_shared<bool>(false);
  CLI::App* cmd = slurm.add_subcommand("exec", "run a job inside its Slurm allocation (written by colo slurm submit)");
  cmd->add_option("--state", args->state_dir, "colo's records of the jobs")->required();
  cmd->add_option("--name", args->name, "the job's name")->required();
  cmd->add_option("--gpus", args->gpus, "GPUs of the job")->capture_default_str();
  cmd->add_option("--mem", *mem, "its GPU memory per GPU, bytes (0 or absent: unknown, a whole GPU)");
  cmd->add_option("--shard-bytes", args->shard_bytes, "GPU memory per shard")->required();
  cmd->add_option("--shards-per-gpu", args->shards_per_gpu, "shards of one GPU (0: unknown)");
  cmd->add_option("--max-retries", args->max_retries, "OOM retries")->capture_default_str();
  cmd->add_option("--recovery", args->recovery, "peak-margin or alone")->capture_default_str();
  cmd->add_option("--mps-control", args->mps_control, "MPS control program")->capture_default_str();
  cmd->add_option("--mps-dir", args->mps_root, "where the node's MPS daemons keep their pipes (default: $TMPDIR)");
  cmd->add_flag("--no-mps", *no_mps, "run without MPS (and so without a pinned-memory limit)");
  cmd->add_option("--sample-interval", args->sample_interval_s, "seconds between GPU readings")->capture_default_str();
  cmd->add_option("command", args->command, "the job's command (after --)")->required();
  cmd->callback([args, mem, no_mps, &exit_code] {
    if (*mem > 0) args->mem_bytes = *mem;
    args->use_mps = !*no_mps;
    if (args->shard_bytes <= 0) throw InputError("--shard-bytes", "", "bytes >= 1");
    if (args->sample_interval_s <= 0) throw InputError("--sample-interval", "", "seconds > 0");
    exit_code = slurm::run_in_allocation(*args, slurm::allocation_from_environment());
  });
}

}  // namespace colo::cli
