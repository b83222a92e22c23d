#include "colo/cli/run_command.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "colo/cli/job_table.h"
#include "colo/cli/report_directory.h"
#include "colo/cli/scheduling_options.h"
#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/interrupt_cleanup.h"
#include "colo/core/stopwatch.h"
#include "colo/gpu/device.h"
#include "colo/sched/batch_totals.h"
#include "colo/sched/runner.h"
#include "colo/sched/trace.h"

namespace colo::cli {
namespace {

struct ReplayArgs {
  SchedulingArgs scheduling;
  std::string trace;
  std::string out;  // a `colo report` directory: summary.json and jobs_<policy>_<mode>.jsonl
};

// Submits each trace job at its offset while the runner works; returns when
// every job is final.
int run_replay(const ReplayArgs& args) {
  auto trace = sched::read_trace(args.trace);
  std::vector<gpu::DevicePtr> devices = gpu::discover_devices();
  for (const auto& job : trace) {
    if (!devices.empty() && job.gpus > static_cast<int>(devices.size())) {
      throw InputError(args.trace, "gpus", "job " + job.name + " asks for " + std::to_string(job.gpus) +
                                               " GPUs; this host has " + std::to_string(devices.size()));
    }
  }
  for (const auto& job : trace) {
    if (job.command.empty()) {
      throw InputError(args.trace, "command", "job " + job.name + " has no command; a replay runs real jobs");
    }
  }
  const SchedulingArgs& scheduling = args.scheduling;
  sched::RunnerOptions options = runner_options(scheduling);
  std::string store_path = scheduling.store.empty()
                               ? args.trace + ".replay-" + scheduling.policy + "-" + scheduling.mode + "/jobs.db"
                               : scheduling.store;
  if (!args.out.empty()) ensure_writable_dir(args.out, "--out", "");
  sched::JobStore store(store_path);
  if (!store.list().empty()) throw InputError(store_path, "", "expected a new store for a replay");
  double t0 = unix_time_s();
  sched::Runner runner(store, devices, options);
  int cleanup = add_interrupt_cleanup([&runner] { runner.stop_all("colo replay was interrupted"); });
  Stopwatch wall;
  size_t next = 0;
  while (true) {
    while (next < trace.size() && trace[next].submit_s <= wall.elapsed_s()) {
      sched::JobSpec spec;
      spec.name = trace[next].name;
      spec.command = {"/bin/sh", "-c", trace[next].command};
      spec.mem_bytes = trace[next].mem_estimate_bytes;
      spec.sm_share = trace[next].sm_activity;
      spec.priority = trace[next].priority;
      spec.gpus = trace[next].gpus;
      spec.workload = trace[next].workload;  // as colo simulate keys it
      store.submit({spec});
      ++next;
    }
    size_t open = runner.step();
    if (open == 0 && next == trace.size()) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(options.poll_interval_s));
  }
  runner.stop_all("replay finished");  // nothing is running; quits MPS daemons
  remove_interrupt_cleanup(cleanup);
  double total_s = wall.elapsed_s();
  auto jobs = store.list();
  print_jobs(jobs);
  sched::BatchTotals totals(jobs);
  std::printf("replay %s/%s: %d completed, %d failed, %d OOM deaths (%d false), %d lost, %.1f s\n",
              scheduling.policy.c_str(), scheduling.mode.c_str(), totals.completed, totals.failed, totals.oom_events,
              totals.false_ooms, totals.lost, total_s);
  nlohmann::json summary = totals.to_json(scheduling.policy, scheduling.mode, total_s);
  summary["trace"] = args.trace;
  summary["jobs"] = jobs.size();
  if (!scheduling.summary_json.empty()) write_file_atomically(scheduling.summary_json, summary.dump(1) + "\n");
  if (!args.out.empty()) write_report_directory(args.out, summary, scheduling.policy, scheduling.mode, jobs, t0);
  return totals.failed > 0 || totals.lost > 0 ? 1 : 0;
}

}  // namespace

void add_replay_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReplayArgs>();
  args->scheduling.poll_s = 0.25;
  CLI::App* cmd = app.add_subcommand("replay", "Replay a trace for real: submit each job at its offset and run it");
  cmd->add_option("trace", args->trace, "trace CSV with commands (docs/trace-format.md)")->required();
  cmd->add_option("--store", args->scheduling.store, "new job store (default: <trace>.replay-<policy>-<mode>/jobs.db)");
  add_scheduling_options(cmd, args->scheduling);
  cmd->add_option("--out", args->out, "write summary.json and jobs_<policy>_<mode>.jsonl here (for colo report)");
  cmd->callback([args, &exit_code] { exit_code = run_replay(*args); });
}

}  // namespace colo::cli
