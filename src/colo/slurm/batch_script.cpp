#include "colo/slurm/batch_script.h"

#include <sstream>
#include <stdexcept>

#include "colo/core/shell_words.h"
#include "colo/core/table.h"
#include "colo/slurm/gres.h"

namespace colo::slurm {

GresRequest gres_request(int gpus, std::optional<int64_t> mem_bytes, const SubmitOptions& options) {
  if (gpus > 1 || !mem_bytes) return {"gpu:" + std::to_string(std::max(gpus, 1)), 0};
  int shards = shards_for(*mem_bytes, options.shard_bytes);
  if (options.shards_per_gpu > 0 && shards > options.shards_per_gpu) {
    throw std::invalid_argument("needs " + bytes_human(static_cast<double>(*mem_bytes)) + " (" +
                                std::to_string(shards) + " shards), more than one GPU of the cluster has (" +
                                std::to_string(options.shards_per_gpu) + " shards)");
  }
  return {"shard:" + std::to_string(shards), shards};
}

BatchJob plan_batch_job(const sched::JobSpec& spec, const SubmitOptions& options) {
  BatchJob job;
  job.name = spec.name;
  job.mem_bytes = spec.mem_bytes;
  job.array = spec.array;
  try {
    job.request = gres_request(spec.gpus, spec.mem_bytes, options);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("job " + spec.name + ": " + e.what());
  }
  std::ostringstream s;
  s << "#!/bin/sh\n"
    << "# Written by colo slurm submit for job " << spec.name << ".\n"
    << "#SBATCH --job-name=" << shell_quote(spec.name) << "\n"
    << "#SBATCH --gres=" << job.request.gres << "\n"
    << "#SBATCH --chdir=" << shell_quote(spec.workdir) << "\n"
    << "#SBATCH --output=" << shell_quote(options.state_dir + (spec.array ? "/logs/%x-%A_%a.out" : "/logs/%x-%j.out"))
    << "\n";
  if (spec.array) s << "#SBATCH --array=" << spec.array->first << "-" << spec.array->second << "\n";
  if (!options.partition.empty()) s << "#SBATCH --partition=" << shell_quote(options.partition) << "\n";
  for (const auto& [key, value] : spec.env) s << "export " << key << "=" << shell_quote(value) << "\n";
  if (spec.array) s << "export COLO_ARRAY_INDEX=\"$SLURM_ARRAY_TASK_ID\"\n";
  s << "exec " << shell_quote(options.colo_path) << " slurm exec --state " << shell_quote(options.state_dir)
    << " --name " << shell_quote(spec.name) << " --gpus " << spec.gpus;
  if (spec.mem_bytes) s << " --mem " << *spec.mem_bytes;
  s << " --shard-bytes " << options.shard_bytes << " --shards-per-gpu " << options.shards_per_gpu
    << " --max-retries " << options.max_retries << " --recovery " << options.recovery << " --";
  for (const auto& word : spec.command) s << " " << shell_quote(word);
  s << "\n";
  job.script = s.str();
  return job;
}

}  // namespace colo::slurm
