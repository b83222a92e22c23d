#include "colo/cli/dist_command.h"

#include <memory>

#include "colo/core/error.h"
#include "colo/core/paths.h"
#include "colo/dist/cluster_simulator.h"
#include "colo/dist/cluster_spec.h"
#include "colo/dist/launcher.h"
#include "colo/dist/rendezvous.h"
#include "colo/dist/run_checkpoint.h"
#include "colo/dist/worker.h"
#include "colo/dist/worker_state.h"

namespace colo::cli {

void add_dist_command(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto resume = std::make_shared<bool>(false);
  auto resume_if_any = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "dist", "Train one model data-parallel over many workers: allreduce, parameter server, switch");
  cmd->add_option("cluster", *path, "cluster file: a training spec plus a [cluster] table (docs/cluster-format.md)");
  cmd->add_option("--output", *output, "override the spec's output directory");
  cmd->add_flag("--resume", *resume,
                "continue from OUTPUT/checkpoint (written every [cluster] checkpoint_steps steps)");
  cmd->add_flag("--resume-if-any", *resume_if_any,
                "continue from OUTPUT/checkpoint if one was committed, else start afresh (a batch script "
                "that Slurm may requeue)")
      ->excludes("--resume");
  cmd->footer(
      "\nOn one host colo starts the workers and servers itself (one worker per GPU where there are\n"
      "GPUs). Under torchrun, srun or mpirun each process finds its rank in the environment\n"
      "(RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_*, with MASTER_ADDR/MASTER_PORT).\n"
      "Per-step records go to OUTPUT/steps-rank<R>.jsonl, evaluations to OUTPUT/eval.jsonl,\n"
      "the summary to OUTPUT/result.json.");
  auto sim_path = std::make_shared<std::string>();
  CLI::App* simulate = cmd->add_subcommand(
      "simulate", "Simulate the strategies on a heterogeneous cluster (virtual time, real training)");
  simulate->add_option("cluster", *sim_path, "cluster file with a [simulate] table")->required();
  simulate->add_option("--output", *output, "override the spec's output directory");
  simulate->footer(
      "\nWorkers of different speeds and links of different bandwidth and latency (alpha-beta) set the\n"
      "virtual time of every step; the model really trains on its data with the simulated staleness.\n"
      "Writes OUTPUT/simulate.jsonl and OUTPUT/simulate-summary.json; plot with\n"
      "python3 python/colo/plots.py dist-sim OUTPUT.");
  simulate->callback([=, &exit_code] {
    dist::ClusterSpec spec = dist::parse_cluster_spec(*sim_path);
    if (!output->empty()) spec.train.output = *output;
    dist::simulate_cluster(spec);
    exit_code = 0;
  });
  cmd->callback([=, &exit_code] {
    if (!simulate->parsed() && path->empty()) throw InputError("colo dist", "", "give a cluster file (colo dist cluster.toml)");
    if (simulate->parsed()) return;
    dist::ClusterSpec spec = dist::parse_cluster_spec(*path);
    if (!output->empty()) spec.train.output = *output;
    spec.resume = *resume || (*resume_if_any && dist::has_committed_checkpoint(spec.train.output));
    if (spec.resume) dist::check_resumable(spec);
    if (auto member = dist::membership_from_environment()) {
      // Under srun/torchrun/mpirun no launcher made the output directory.
      ensure_writable_dir(spec.train.output, spec.train.source, "output");
      dist::run_rank(spec, *member);
      exit_code = 0;
      return;
    }
    std::vector<std::string> argv{this_program_path(), "dist", *path};
    if (!output->empty()) {
      argv.push_back("--output");
      argv.push_back(*output);
    }
    if (spec.resume) argv.push_back("--resume");
    exit_code = dist::launch_local(spec, argv);
  });
}

}  // namespace colo::cli
