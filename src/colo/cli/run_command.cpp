#include "colo/cli/run_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "colo/cli/daemon_client.h"
#include "colo/server/job_memory.h"
#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/interrupt_cleanup.h"
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/core/table.h"
#include "colo/gpu/device.h"
#include "colo/gpu/sampler.h"
#include "colo/sched/runner.h"
#include "colo/sched/trace.h"

namespace colo::cli {
namespace {

// What `colo run` and `colo replay` share: where jobs live and how they are placed.
struct SchedulingArgs {
  std::string store;
  std::string policy = "magm";
  std::string mode = "mps";
  std::string recovery = "alone";
  std::string summary_json;
  double poll_s = 0.5;
  double reserve_after_s = 0;
};

struct RunArgs {
  SchedulingArgs scheduling;
  std::string jobs_file;
  bool serve = false;
  std::string out;  // a `colo report` directory, with the GPU timeline of the batch
};

struct ReplayArgs {
  SchedulingArgs scheduling;
  std::string trace;
  std::string out;  // a `colo report` directory: summary.json and jobs_<policy>_<mode>.jsonl
};

// Runner options from the flags; validates names before anything is written.
sched::RunnerOptions runner_options(const SchedulingArgs& args) {
  return sched::runner_options_from_names(args.policy, args.mode, args.recovery, args.poll_s, args.reserve_after_s);
}

void add_scheduling_options(CLI::App* cmd, SchedulingArgs& args) {
  cmd->add_option("--policy", args.policy, "exclusive | round-robin | magm | lug | best-fit")->capture_default_str();
  cmd->add_option("--mode", args.mode, "exclusive | shared | mps")->capture_default_str();
  cmd->add_option("--recovery", args.recovery, "OOM recovery: alone | peak-margin")->capture_default_str();
  cmd->add_option("--poll", args.poll_s, "seconds between scheduling rounds")->capture_default_str();
  cmd->add_option("--reserve-after", args.reserve_after_s,
                  "a job waiting this long (s) that does not fit stops later jobs from starting (0: never)")
      ->capture_default_str();
  cmd->add_option("--summary-json", args.summary_json, "write a summary here");
}

// What happened to a batch of jobs, for the last line and the summary file.
struct BatchTotals {
  int completed = 0, failed = 0, oom_events = 0, lost = 0;
  double energy_j = 0, wait_s = 0, exec_s = 0, jct_s = 0;  // means over completed jobs

  explicit BatchTotals(const std::vector<sched::JobRecord>& jobs) {
    for (const auto& j : jobs) {
      completed += j.state == sched::JobState::kCompleted;
      failed += j.state == sched::JobState::kFailed;
      oom_events += j.oom_deaths;
      lost += !sched::is_final(j.state);
      energy_j += j.energy_j;
      if (j.state == sched::JobState::kCompleted && j.start_s && j.end_s) {
        wait_s += *j.start_s - j.submit_s;
        exec_s += *j.end_s - *j.start_s;
        jct_s += *j.end_s - j.submit_s;
      }
    }
    int n = std::max(completed, 1);
    wait_s /= n;
    exec_s /= n;
    jct_s /= n;
  }

  nlohmann::json to_json(const SchedulingArgs& args, double wall_s) const {
    return {{"policy", args.policy}, {"mode", args.mode}, {"wall_s", wall_s}, {"total_s", wall_s},
            {"completed", completed}, {"failed", failed}, {"oom_events", oom_events},
            {"oom_unrecovered", failed}, {"jobs_lost", lost}, {"mean_wait_s", wait_s}, {"mean_exec_s", exec_s},
            {"mean_jct_s", jct_s}, {"job_energy_share_j", energy_j}, {"energy_j", energy_j}};
  }
};

std::string duration_cell(const sched::JobRecord& job) {
  if (!job.start_s) return "-";
  double end = job.end_s.value_or(unix_time_s());
  return fixed(end - *job.start_s, 1);
}

// The fields of a record the queue table shows, from colod's JSON.
sched::JobRecord record_from_json(const nlohmann::json& j) {
  sched::JobRecord r;
  r.id = j.at("id").get<int64_t>();
  r.spec = sched::job_spec_from_json(j.at("spec"));
  r.state = sched::job_state_from_string(j.at("state").get<std::string>()).value_or(sched::JobState::kPending);
  r.submit_s = j.value("submit_s", 0.0);
  r.gpu = j.value("gpu", -1);
  r.attempts = j.value("attempts", 0);
  r.reason = j.value("reason", "");
  if (j.contains("start_s")) r.start_s = j["start_s"].get<double>();
  if (j.contains("end_s")) r.end_s = j["end_s"].get<double>();
  if (j.contains("exit_code")) r.exit_code = j["exit_code"].get<int>();
  if (j.contains("peak_mem_bytes")) r.peak_mem_bytes = j["peak_mem_bytes"].get<int64_t>();
  return r;
}

void print_jobs(const std::vector<sched::JobRecord>& jobs) {
  TablePrinter table({{"id", 5}, {"name", 28}, {"state", 13}, {"gpu", 3}, {"tries", 5}, {"run_s", 8},
                      {"peak_mem", 10}, {"exit", 4}, {"reason", 30}});
  table.header();
  for (const auto& j : jobs) {
    table.row({std::to_string(j.id), j.spec.name.substr(0, 28), sched::to_string(j.state),
               j.gpu >= 0 ? std::to_string(j.gpu) : "-", std::to_string(j.attempts), duration_cell(j),
               j.peak_mem_bytes ? bytes_human(double(*j.peak_mem_bytes)) : "-",
               j.exit_code ? std::to_string(*j.exit_code) : "-", j.reason});
  }
}

// Writes what `colo report` reads, as `colo simulate --out` does: a one-run
// summary.json and a record per job with times in seconds from `t0`
// (the replay's start). A job that was retried shows its last attempt.
void write_report_directory(const std::string& dir, const nlohmann::json& summary, const SchedulingArgs& scheduling,
                            const std::vector<sched::JobRecord>& jobs, double t0) {
  auto since_start = [t0](const std::optional<double>& t) { return t ? *t - t0 : -1.0; };
  JsonLinesWriter out(dir + "/jobs_" + scheduling.policy + "_" + scheduling.mode + ".jsonl",
                      JsonLinesWriter::Mode::kTruncate);
  for (const auto& j : jobs) {
    out.write({{"id", j.id}, {"name", j.spec.name}, {"state", sched::to_string(j.state)}, {"gpu", j.gpu},
               {"submit_s", j.submit_s - t0}, {"start_s", since_start(j.start_s)}, {"end_s", since_start(j.end_s)},
               {"attempts", j.attempts}, {"oom_deaths", j.oom_deaths}, {"energy_j", j.energy_j},
               {"peak_mem_bytes", j.peak_mem_bytes.value_or(0)}});
  }
  write_file_atomically(dir + "/summary.json", nlohmann::json::array({summary}).dump(1) + "\n");
}

// Appends every device's latest reading to the timeline CSV `colo report` draws.
class TimelineWriter {
 public:
  // Throws InputError when `path` cannot be written.
  explicit TimelineWriter(const std::string& path) : out_(path, std::ios::trunc) {
    if (!out_) throw InputError(path, "", "cannot write the GPU timeline");
    out_ << gpu::sample_csv_header() << "\n";
  }
  void append(const std::map<int, gpu::DeviceSample>& samples) {
    for (const auto& [position, sample] : samples) out_ << gpu::sample_csv_row(sample) << "\n";
    out_.flush();
  }

 private:
  std::ofstream out_;
};

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
  sched::JobStore store(store_path);
  if (!specs.empty()) {
    server::fill_memory_estimates(specs, &store);
    auto ids = store.submit(specs);
    std::fprintf(stderr, "colo run: %zu job(s) submitted to %s\n", ids.size(), store_path.c_str());
  }
  double t0 = unix_time_s();
  std::optional<TimelineWriter> timeline;
  if (!args.out.empty()) {
    ensure_writable_dir(args.out, "--out", "");
    if (!devices.empty()) timeline.emplace(args.out + "/timeline_gpus.csv");
  }
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
  BatchTotals totals(jobs);
  std::printf("%d completed, %d failed, %d OOM deaths, %d lost, %.1f s, %.0f J\n", totals.completed, totals.failed,
              totals.oom_events, totals.lost, wall.elapsed_s(), totals.energy_j);
  nlohmann::json summary = totals.to_json(args.scheduling, wall.elapsed_s());
  summary["store"] = store_path;
  summary["jobs"] = jobs.size();
  if (!args.scheduling.summary_json.empty()) {
    write_file_atomically(args.scheduling.summary_json, summary.dump(1) + "\n");
  }
  if (!args.out.empty()) write_report_directory(args.out, summary, args.scheduling, jobs, t0);
  return totals.failed > 0 || totals.lost > 0 ? 1 : 0;
}

// Submits each trace job at its offset while the runner works; returns when
// every job is final.
int run_replay(const ReplayArgs& args) {
  auto trace = sched::read_trace(args.trace);
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
  sched::Runner runner(store, gpu::discover_devices(), options);
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
  BatchTotals totals(jobs);
  std::printf("replay %s/%s: %d completed, %d failed, %d OOM deaths, %d lost, %.1f s\n", scheduling.policy.c_str(),
              scheduling.mode.c_str(), totals.completed, totals.failed, totals.oom_events, totals.lost, total_s);
  nlohmann::json summary = totals.to_json(scheduling, total_s);
  summary["trace"] = args.trace;
  summary["jobs"] = jobs.size();
  if (!scheduling.summary_json.empty()) write_file_atomically(scheduling.summary_json, summary.dump(1) + "\n");
  if (!args.out.empty()) write_report_directory(args.out, summary, scheduling, jobs, t0);
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
              "that ended (from their status files) and requeues the rest: no job is lost or run twice.");
  cmd->callback([args, &exit_code] { exit_code = run_batch(*args); });
}

void add_history_command(CLI::App& app, int& exit_code) {
  auto store_path = std::make_shared<std::string>(sched::default_store_path());
  CLI::App* cmd = app.add_subcommand("history", "Finished jobs with wait, run time, JCT, peak memory and energy (like sacct)");
  cmd->add_option("--store", *store_path, "job store")->capture_default_str();
  cmd->callback([store_path, &exit_code] {
    sched::JobStore store(*store_path);
    auto jobs = store.list({sched::JobState::kCompleted, sched::JobState::kFailed, sched::JobState::kCancelled});
    TablePrinter table({{"id", 5}, {"name", 28}, {"state", 10}, {"wait_s", 8}, {"run_s", 8}, {"jct_s", 8},
                        {"peak_mem", 10}, {"energy_j", 9}, {"tries", 5}, {"ooms", 4}});
    table.header();
    for (const auto& j : jobs) {
      bool ran = j.start_s && j.end_s;
      table.row({std::to_string(j.id), j.spec.name.substr(0, 28), sched::to_string(j.state),
                 ran ? fixed(*j.start_s - j.submit_s, 1) : "-", ran ? fixed(*j.end_s - *j.start_s, 1) : "-",
                 j.end_s ? fixed(*j.end_s - j.submit_s, 1) : "-",
                 j.peak_mem_bytes ? bytes_human(double(*j.peak_mem_bytes)) : "-", fixed(j.energy_j, 0),
                 std::to_string(j.attempts), std::to_string(j.oom_deaths)});
    }
    BatchTotals totals(store.list());
    std::printf("%d completed, %d failed, %d OOM deaths, %d not final; mean wait %.1f s, run %.1f s, JCT %.1f s; "
                "energy share %.0f J\n",
                totals.completed, totals.failed, totals.oom_events, totals.lost, totals.wait_s, totals.exec_s,
                totals.jct_s, totals.energy_j);
    exit_code = 0;
  });
}

void add_queue_command(CLI::App& app, int& exit_code) {
  auto store_path = std::make_shared<std::string>(sched::default_store_path());
  CLI::App* cmd = app.add_subcommand("queue", "List the jobs of a store (like squeue and sacct together)");
  cmd->add_option("--store", *store_path, "job store")->capture_default_str();
  cmd->callback([store_path, cmd, &exit_code] {
    exit_code = 0;
    if (cmd->count("--store") == 0) {
      if (auto daemon = DaemonClient::find()) {
        std::vector<sched::JobRecord> jobs;
        for (const auto& j : daemon->get("/jobs")) jobs.push_back(record_from_json(j));
        print_jobs(jobs);
        return;
      }
    }
    sched::JobStore store(*store_path);
    print_jobs(store.list());
  });
}

}  // namespace colo::cli
