// `colo slurm submit jobs.toml`: each job to Slurm as a batch job asking for
// as many GPU-memory shards as colo estimates it needs.

#include <chrono>
#include <cstdio>
#include <set>

#include "colo/cli/job_table.h"
#include "colo/cli/slurm_subcommands.h"
#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/table.h"
#include "colo/core/units.h"
#include "colo/sched/job_spec.h"
#include "colo/sched/admission.h"
#include "colo/slurm/batch_script.h"
#include "colo/slurm/gres.h"
#include "colo/slurm/slurm_client.h"
#include "colo/slurm/state_dir.h"

namespace colo::cli {
namespace {

struct SlurmSubmitArgs {
  std::string jobs_file;
  std::string state = "colo-slurm";
  std::string shard = "1GiB";
  int shards_per_gpu = 0;
  std::string partition;
  int max_retries = 3;
  std::string recovery = "peak-margin";
  bool dry_run = false;
};

// Completed attempts with their measured peaks: the history estimator's input.
std::vector<estimate::PastRun> slurm_history(const slurm::StateDir& state) {
  std::vector<estimate::PastRun> past;
  for (const auto& a : state.attempts()) {
    if (a.state == "COMPLETED" && a.peak_bytes) past.push_back({a.command, *a.peak_bytes});
  }
  return past;
}

int submit(const SlurmSubmitArgs& args) {
  std::vector<sched::JobSpec> specs = sched::parse_job_file(args.jobs_file);
  std::set<std::string> names;
  for (auto& spec : specs) {
    if (!names.insert(spec.name).second) {
      throw InputError(args.jobs_file, "name", "a name of its own for each job (\"" + spec.name + "\" twice)");
    }
    spec.workdir = absolute_path(spec.workdir);
  }
  if (args.max_retries < 0) throw InputError("--max-retries", "", "a count >= 0");
  slurm::SubmitOptions options;
  options.colo_path = colo_program_path();  // the thin colo: `slurm exec` needs no LibTorch
  options.state_dir = absolute_path(args.state);
  auto shard = parse_bytes(args.shard);
  if (!shard || *shard <= 0) throw InputError("--shard", "", "a size such as 1GiB");
  options.shard_bytes = *shard;
  options.partition = args.partition;
  options.max_retries = args.max_retries;
  options.recovery = args.recovery;
  if (args.recovery != "peak-margin" && args.recovery != "alone") {
    throw InputError("--recovery", "", "peak-margin or alone");
  }
  slurm::SlurmClient client;
  options.shards_per_gpu = args.shards_per_gpu;
  if (options.shards_per_gpu == 0 && !args.dry_run) {
    options.shards_per_gpu = slurm::shards_per_gpu_from_sinfo(client.node_gres());
    if (options.shards_per_gpu == 0) {
      throw InputError("colo slurm submit", "gres/shard",
                       "nodes with gpu and shard GRES (colo slurm conf prints the lines), or --shards-per-gpu");
    }
  }
  slurm::StateDir state(options.state_dir);
  sched::fill_memory_estimates(specs, slurm_history(state));

  std::vector<slurm::BatchJob> jobs;
  for (const auto& spec : specs) jobs.push_back(slurm::plan_batch_job(spec, options));  // all checked before any sbatch
  TablePrinter table({{"job", 28}, {"slurm id", 10}, {"gres", 10}, {"memory", 20}, {"array", 9}});
  table.header();
  for (const auto& job : jobs) {
    std::string path = state.script_path(job.name);
    write_file_atomically(path, job.script);
    std::string id = "(dry run)";
    if (args.dry_run) {
      std::printf("# %s\n%s\n", path.c_str(), job.script.c_str());
    } else {
      id = client.submit(path, {});
      slurm::SubmittedJob record;
      record.slurm_id = id;
      record.name = job.name;
      record.gres = job.request.gres;
      record.mem_bytes = job.mem_bytes;
      record.array = job.array;
      record.submit_unix =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      state.append_submitted(record);
    }
    table.row({name_cell(job.name), id, job.request.gres,
                   job.mem_bytes ? bytes_human(static_cast<double>(*job.mem_bytes)) : "unknown: whole GPU",
                   job.array ? std::to_string(job.array->first) + "-" + std::to_string(job.array->second) : ""});
  }
  std::printf("state: %s (colo slurm status --state %s)\n", options.state_dir.c_str(), options.state_dir.c_str());
  return 0;
}

}  // namespace

void add_slurm_submit(CLI::App& slurm, int& exit_code) {
  auto args = std::make_shared<SlurmSubmitArgs>();
  CLI::App* cmd = slurm.add_subcommand("submit", "submit a job file to Slurm, each job asking for its GPU memory");
  cmd->add_option("jobs", args->jobs_file, "job file (as for colo run)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--state", args->state, "colo's records of these jobs, on a file system the nodes share")
      ->capture_default_str();
  cmd->add_option("--shard", args->shard, "GPU memory per shard, as in colo slurm conf")->capture_default_str();
  cmd->add_option("--shards-per-gpu", args->shards_per_gpu, "shards of one GPU (default: read from sinfo)");
  cmd->add_option("--partition", args->partition, "Slurm partition (default: the cluster's)");
  cmd->add_option("--max-retries", args->max_retries, "OOM retries, each with more memory")->capture_default_str();
  cmd->add_option("--recovery", args->recovery, "what an OOM retry asks for: peak-margin or alone")
      ->capture_default_str();
  cmd->add_flag("--dry-run", args->dry_run, "print the batch scripts; submit nothing");
  cmd->callback([args, &exit_code] { exit_code = submit(*args); });
}

}  // namespace colo::cli
