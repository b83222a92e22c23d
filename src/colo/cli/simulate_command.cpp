#include "colo/cli/simulate_command.h"

#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/subprocess.h"
#include "colo/core/json_lines.h"
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/core/table.h"
#include "colo/sched/simulator.h"
#include "colo/sched/trace.h"

namespace colo::cli {
namespace {

struct SimulateArgs {
  std::string trace;
  int gpus = 4;
  int nodes = 0;
  int gpus_per_node = 0;
  std::string policy = "all";
  std::string mode = "mps";
  std::string recovery = "alone";
  double gpu_mem_gib = 80;
  double reserve_after_s = 0;
  bool undeclared_sm_share = false;
  bool no_throughput_rule = false;
  bool no_probe_alone = false;
  bool shares_from_launch = false;
  bool provisional_memory = false;
  std::string out;
};

nlohmann::json summary_json(const sched::SimulationResult& r, double wall_s) {
  return {{"policy", r.policy}, {"mode", r.mode}, {"jobs", r.jobs.size()}, {"total_s", r.total_s},
          {"energy_j", r.energy_j}, {"mean_wait_s", r.mean_wait_s}, {"mean_exec_s", r.mean_exec_s},
          {"mean_jct_s", r.mean_jct_s}, {"oom_events", r.oom_events}, {"oom_unrecovered", r.oom_unrecovered},
          {"jobs_lost", r.jobs_lost}, {"gpus_closed_by_throughput_rule", r.gpus_closed},
          {"judged_joins", r.judged_joins}, {"judged_closings", r.judged_closings}, {"simulation_wall_s", wall_s}};
}

void write_jobs(const std::string& path, const sched::SimulationResult& r) {
  JsonLinesWriter out(path, JsonLinesWriter::Mode::kTruncate);
  for (const auto& j : r.jobs) {
    nlohmann::json line{{"id", j.id}, {"name", j.name}, {"state", sched::to_string(j.state)}, {"gpu", j.gpu},
                        {"submit_s", j.submit_s}, {"start_s", j.start_s}, {"end_s", j.end_s}, {"attempts", j.attempts},
                        {"oom_deaths", j.oom_deaths}, {"energy_j", j.energy_j}};
    if (j.settled_share) line["settled_share"] = *j.settled_share;
    out.write(line);
  }
}

int run_simulate(const SimulateArgs& args) {
  auto trace = sched::read_trace(args.trace);
  if (args.gpus < 1) throw InputError("--gpus", "", "expected at least 1");
  if ((args.nodes > 0) != (args.gpus_per_node > 0)) {
    throw InputError("--nodes/--gpus-per-node", "", "both, each at least 1, or neither");
  }
  int gpus = args.nodes > 0 ? args.nodes * args.gpus_per_node : args.gpus;
  if (args.reserve_after_s < 0) throw InputError("--reserve-after", "", "expected seconds >= 0 (0: no reservation)");
  std::vector<std::pair<std::string, std::string>> runs;  // policy, mode
  if (args.policy == "all") {
    runs.push_back({"exclusive", "exclusive"});
    for (const auto& p : sched::policy_names()) {
      if (p != "exclusive") runs.push_back({p, args.mode});
    }
  } else {
    std::stringstream names(args.policy);
    std::string name;
    while (std::getline(names, name, ',')) runs.push_back({name, name == "exclusive" ? "exclusive" : args.mode});
  }
  // Before anything is written or printed: a job the simulated cluster could never run.
  for (const auto& job : trace) {
    const int most = args.gpus_per_node > 0 ? args.gpus_per_node : gpus;
    if (job.gpus > most) {
      throw InputError(args.trace, "gpus", "at most " + std::to_string(most) + " GPUs per job (" +
                                               (args.gpus_per_node > 0 ? "a node's" : "the simulation's") +
                                               "), but job " + job.name + " asks for " + std::to_string(job.gpus));
    }
  }
  if (!args.out.empty()) ensure_writable_dir(args.out, "--out", "");
  TablePrinter table({{"policy", 11}, {"mode", 9}, {"total_h", 8}, {"energy_kwh", 10}, {"wait_min", 8},
                      {"jct_min", 8}, {"ooms", 5}, {"unrecov", 7}, {"lost", 4}, {"vs_excl", 7}});
  table.header();
  nlohmann::json all = nlohmann::json::array();
  double exclusive_total = 0;
  for (const auto& [policy, mode] : runs) {
    sched::SimulationOptions options;
    options.gpus = gpus;
    options.gpus_per_node = args.gpus_per_node;
    options.gpu.mem_total_bytes = static_cast<int64_t>(args.gpu_mem_gib * double(int64_t{1} << 30));
    options.policy = policy;
    options.mode = sched::collocation_mode_from_string(mode);
    options.recovery.rule = sched::recovery_rule_from_string(args.recovery);
    options.backfill.reserve_after_s = args.reserve_after_s;
    options.declared_sm_share = !args.undeclared_sm_share;
    options.throughput_rule = !args.no_throughput_rule;
    options.thresholds.probe_alone = !args.no_probe_alone;  // as colo run does
    options.thresholds.count_shares_once_training = !args.shares_from_launch;
    options.provisional_memory = args.provisional_memory;
    Stopwatch clock;
    auto result = sched::simulate(trace, options);
    double wall = clock.elapsed_s();
    if (policy == "exclusive") exclusive_total = result.total_s;
    nlohmann::json entry = summary_json(result, wall);
    entry["gpus"] = gpus;
    entry["gpus_per_node"] = args.gpus_per_node;
    entry["throughput_rule"] = options.throughput_rule;
    all.push_back(entry);
    table.row({policy, mode, fixed(result.total_s / 3600, 2), fixed(result.energy_j / 3.6e6, 2),
               fixed(result.mean_wait_s / 60, 1), fixed(result.mean_jct_s / 60, 1),
               std::to_string(result.oom_events), std::to_string(result.oom_unrecovered),
               std::to_string(result.jobs_lost),
               exclusive_total > 0 ? fixed(exclusive_total / result.total_s, 2) + "x" : "-"});
    if (!args.out.empty()) write_jobs(args.out + "/jobs_" + policy + "_" + mode + ".jsonl", result);
  }
  if (!args.out.empty()) write_file_atomically(args.out + "/summary.json", all.dump(1) + "\n");
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Run a trace through the scheduler against simulated GPUs");
  cmd->add_option("trace", args->trace, "trace CSV (docs/trace-format.md)")->required();
  cmd->add_option("--gpus", args->gpus, "simulated GPUs (one node)")->capture_default_str();
  cmd->add_option("--nodes", args->nodes, "simulated nodes (with --gpus-per-node, instead of --gpus)");
  cmd->add_option("--gpus-per-node", args->gpus_per_node, "GPUs of each node; a multi-GPU job stays on one");
  cmd->add_option("--policy", args->policy,
                  "exclusive | round-robin | magm | lug | best-fit | slurm-shard | all, or a comma-separated list")
      ->capture_default_str();
  cmd->add_option("--mode", args->mode, "collocation mode for collocating policies: shared | mps")->capture_default_str();
  cmd->add_option("--recovery", args->recovery, "OOM recovery rule: alone | peak-margin")->capture_default_str();
  cmd->add_option("--gpu-mem-gib", args->gpu_mem_gib, "memory of each simulated GPU")->capture_default_str();
  cmd->add_option("--reserve-after", args->reserve_after_s,
                  "a job waiting this long (s) that does not fit stops later jobs from starting (0: never)")
      ->capture_default_str();
  cmd->add_flag("--undeclared-sm-share", args->undeclared_sm_share,
                "tell the scheduler no job's SM share: each settles and is measured, as real jobs that declare none");
  cmd->add_flag("--no-probe-alone", args->no_probe_alone,
                "with --undeclared-sm-share: settling jobs are measured beside their neighbours, not alone "
                "(colo run --no-probe-alone)");
  cmd->add_flag("--shares-from-launch", args->shares_from_launch,
                "a known SM share counts from its job's launch, not from when it trains (colo run --shares-from-launch)");
  cmd->add_flag("--no-throughput-rule", args->no_throughput_rule,
                "never close a GPU whose modelled training throughput stopped growing (the runner's rule)");
  cmd->add_flag("--provisional-memory", args->provisional_memory,
                "a job without mem_estimate_bytes starts beside others with a provisional reservation until its "
                "peak is measured, as colo run does on real GPUs (default: only on an empty GPU)");
  cmd->add_option("--out", args->out, "write summary.json and jobs_<policy>_<mode>.jsonl here");
  cmd->callback([args, &exit_code] { exit_code = run_simulate(*args); });
}

void add_trace_command(CLI::App& app, int& exit_code) {
  CLI::App* trace = app.add_subcommand("trace", "Workload traces");
  trace->require_subcommand(1);
  auto options = std::make_shared<sched::TraceGeneratorOptions>();
  auto out = std::make_shared<std::string>();
  CLI::App* generate = trace->add_subcommand("generate", "Write a synthetic trace (RAD-RM-like model mix, Poisson arrivals)");
  generate->add_option("--jobs", options->jobs, "number of jobs")->required();
  generate->add_option("--seed", options->seed, "random seed")->capture_default_str();
  generate->add_option("--mean-interarrival", options->mean_interarrival_s, "seconds between arrivals, on average")->capture_default_str();
  generate->add_option("--multi-gpu-fraction", options->multi_gpu_fraction,
                       "share of the medium and large jobs that take 2 GPUs")->capture_default_str();
  generate->add_option("--out", *out, "trace CSV to write")->required();
  generate->callback([options, out, &exit_code] {
    if (options->jobs < 1) throw InputError("--jobs", "", "expected at least 1");
    sched::write_trace(*out, sched::generate_trace(*options));
    std::printf("wrote %d jobs to %s\n", options->jobs, out->c_str());
    exit_code = 0;
  });
}

}  // namespace colo::cli
