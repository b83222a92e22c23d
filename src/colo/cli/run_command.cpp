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
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/gpu/device.h"
#include "colo/sched/batch_totals.h"
#include "colo/sched/runner.h"
#include "colo/sched/admission.h"

namespace colo::cli {
namespace {

struct RunArgs {
  SchedulingArgs scheduling;
  std::string jobs_file;
  bool serve = false;
  std::string out;  // a `colo report` directory, with the GPU timeline of the batch
};

// What names a job file in a store: its absolute path and a digest of its
// content (FNV-1a), so that an edited file counts as new work.
std::string job_file_source(const std::string& path) {
  uint64_t digest = 1469598103934665603ull;
  for (unsigned char c : read_file(path)) digest = (digest ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest));
  return absolute_path(path) + "#" + hex;
}

int run_batch(const RunArgs& args) {
  std::string store_path = args.scheduling.store;
  std::vector<sched::JobSpec> specs;
  if (!args.jobs_file.empty()) specs = sched::parse_job_file(args.jobs_file);
  if (store_path.empty()) {
    if (args.jobs_file.empty() && !args.serve) throw InputError("colo run", "", "expected a jobs file or --store");
    store_path = args.jobs_file.empty() ? sched::default_store_path() : args.jobs_file + ".colo/jobs.db";
  }
  sched::RunnerOptions options = runner_options(args.scheduling);

  std::vector<gpu::DevicePtr> devices = gpu::discover_devices();
  try {
    sched::check_gpus_fit(specs, devices.size());
  } catch (const std::invalid_argument& e) {
    throw InputError(args.jobs_file, "gpus", e.what());
  }
  if (!args.out.empty()) ensure_writable_dir(args.out, "--out", "");  // before anything is submitted
  for (const std::string& path : options.learn_from) sched::JobStore{path};  // one that is no job store throws here
  sched::JobStore store(store_path);
  std::string source = args.jobs_file.empty() ? "" : job_file_source(args.jobs_file);
  std::vector<int64_t> earlier = source.empty() ? std::vector<int64_t>{} : store.submitted_from(source);
  if (!earlier.empty()) {
    // A restart after a crash: the file's jobs are in the store already.
    std::fprintf(stderr, "colo run: %s was submitted to %s before (%zu job(s), ids %lld-%lld); resuming them\n",
                 args.jobs_file.c_str(), store_path.c_str(), earlier.size(), static_cast<long long>(earlier.front()),
                 static_cast<long long>(earlier.back()));
  } else if (!specs.empty()) {
    sched::fill_memory_estimates(specs, &store, sched::ByScheduler::kModelsAndSpecs);
    auto ids = store.submit(specs, source);
    std::fprintf(stderr, "colo run: %zu job(s) submitted to %s\n", ids.size(), store_path.c_str());
  }
  double t0 = unix_time_s();
  std::optional<TimelineWriter> timeline;
  if (!args.out.empty() && !devices.empty()) timeline.emplace(args.out + "/timeline_gpus.csv");
  sched::Runner runner(store, devices, options);
  runner.recover();
  int cleanup = add_interrupt_cleanup([&runner] { runner.stop_all("colo run was interrupted"); });
  Stopwatch wall;
  if (args.serve) {
    std::fprintf(stderr, "colo run: serving %s until interrupted (submit with colo submit --store)\n",
                 store_path.c_str());
    while (true) {  // ends with SIGINT/SIGTERM: running jobs are stopped and requeued
      runner.step();
      std::this_thread::sleep_for(std::chrono::duration<double>(options.poll_interval_s));
    }
  }
  runner.run_until_done([&] {
    if (timeline) timeline->append(runner.last_samples());
  });
  remove_interrupt_cleanup(cleanup);

  auto jobs = store.list();
  print_jobs(jobs);
  sched::BatchTotals totals(jobs);
  std::printf("%d completed, %d failed, %d OOM deaths (%d false), %d lost, %.1f s, %.0f J", totals.completed,
              totals.failed, totals.oom_events, totals.false_ooms, totals.lost, wall.elapsed_s(), totals.energy_j);
  if (totals.mean_slowdown) {
    std::printf("; slowdown against alone: mean %.2fx, max %.2fx", *totals.mean_slowdown, *totals.max_slowdown);
  }
  const sched::Runner::PauseStats& pauses = runner.pause_stats();
  if (pauses.pauses > 0) {
    std::printf("; %d pause(s), %.1f job-s, to measure shares alone", pauses.pauses, pauses.paused_job_s);
  }
  std::printf("\n");
  nlohmann::json summary = totals.to_json(args.scheduling.policy, args.scheduling.mode, wall.elapsed_s());
  summary["pauses"] = pauses.pauses;
  summary["paused_job_s"] = pauses.paused_job_s;
  summary["judged_joins"] = runner.judged_stats().joins;
  summary["judged_closings"] = runner.judged_stats().closings;
  summary["store"] = store_path;
  summary["jobs"] = jobs.size();
  if (!args.scheduling.summary_json.empty()) {
    write_file_atomically(args.scheduling.summary_json, summary.dump(1) + "\n");
  }
  if (!args.out.empty()) write_report_directory(args.out, summary, args.scheduling.policy, args.scheduling.mode, jobs, t0);
  return totals.failed > 0 || totals.lost > 0 ? 1 : 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run a batch of jobs on this machine's GPUs, then exit (no daemon)");
  cmd->add_option("jobs", args->jobs_file, "job file (docs/job-format.md); omit to resume --store");
  cmd->add_option("--store", args->scheduling.store, "job store (default: <jobs>.colo/jobs.db)");
  add_scheduling_options(cmd, args->scheduling);
  cmd->add_flag("--serve", args->serve, "keep running, taking jobs added by colo submit, until interrupted");
  cmd->add_option("--out", args->out,
                  "write summary.json, jobs_<policy>_<mode>.jsonl and timeline_gpus.csv here (for colo report)");
  cmd->footer("\nKilled and restarted with the same --store, it adopts jobs still running, settles those\n"
              "that ended (from their status files) and requeues the rest: no job is lost or run twice.\n"
              "Given the same jobs file again (unchanged), it submits nothing new and resumes its jobs.");
  cmd->callback([args, &exit_code] { exit_code = run_batch(*args); });
}

}  // namespace colo::cli
