#include "colo/cli/simulate_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "colo/cli/plot_script.h"
#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/subprocess.h"
#include "colo/core/table.h"
#include "colo/sched/schedule_stats.h"

namespace colo::cli {
namespace {

std::vector<sched::ScheduledJob> read_schedule(const std::string& path) {
  std::vector<sched::ScheduledJob> jobs;
  for (const auto& record : read_json_lines(path)) jobs.push_back(sched::scheduled_job_from_json(record));
  return jobs;
}

// One row per jobs_<policy>_<mode>.jsonl: mean JCT, waits, jobs per GPU and,
// against the exclusive run of the same directory, per-job slowdown.
void print_schedules(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("jobs_", 0) == 0 && name.size() > 6 && name.substr(name.size() - 6) == ".jsonl") {
      paths.push_back(entry.path().string());
    }
  }
  if (paths.empty()) return;
  std::sort(paths.begin(), paths.end());
  std::optional<std::vector<sched::ScheduledJob>> alone;
  std::string exclusive = dir + "/jobs_exclusive_exclusive.jsonl";
  if (path_exists(exclusive)) alone = read_schedule(exclusive);
  TablePrinter table({{"run", 22}, {"done", 5}, {"jct_mean_s", 10}, {"wait_mean_s", 11}, {"wait_p95_s", 10},
                      {"jobs/gpu_max", 12}, {"jobs/gpu_mean", 13}, {"slowdown_mean", 13}, {"slowdown_max", 12}});
  std::printf("\n");
  table.header();
  for (const auto& path : paths) {
    auto jobs = read_schedule(path);
    sched::ScheduleStats s = sched::schedule_stats(jobs, alone ? &*alone : nullptr);
    std::string run = std::filesystem::path(path).stem().string().substr(5);
    table.row({run, std::to_string(s.completed), fixed(s.mean_jct_s, 1), fixed(s.mean_wait_s, 1),
               fixed(s.p95_wait_s, 1), std::to_string(s.max_jobs_per_gpu), fixed(s.mean_jobs_per_gpu, 2),
               s.mean_slowdown ? fixed(*s.mean_slowdown, 2) : "-", s.max_slowdown ? fixed(*s.max_slowdown, 2) : "-"});
  }
  if (!alone) std::printf("(no jobs_exclusive_exclusive.jsonl here: no slowdown against running alone)\n");
}

// Has python/colo/plots.py draw `what` for `dir`; prints the PNGs' paths.
int draw_plots(const std::string& what, const std::string& dir) {
  ProcessResult plots = run_plot_script(what, dir);
  if (plots.exit_code != 0) {
    std::fprintf(stderr, "colo report: plotting failed (exit %d):\n%s", plots.exit_code, plots.output.c_str());
    return 1;
  }
  std::printf("%s", plots.output.c_str());
  return 0;
}

// A `colo compare --out` directory: its recommendations, and its plots redrawn.
int report_compare(const std::string& dir, const nlohmann::json& summary) {
  for (const char* key : {"recommended_for_throughput", "recommended_for_energy"}) {
    if (summary.contains(key) && summary[key].is_object() && summary[key].contains("reason")) {
      std::printf("recommended %s\n", summary[key]["reason"].get<std::string>().c_str());
    }
  }
  return draw_plots("compare", dir);
}
}  // namespace

int run_report(const std::string& dir) {
  std::string summary_path = dir + "/summary.json";
  if (!path_exists(dir)) throw InputError(dir, "", "no such directory");
  if (!is_directory(dir)) throw InputError(dir, "", "expected a results directory, not a file");
  if (!path_exists(summary_path)) {
    throw InputError(dir, "", "expected summary.json (from colo simulate, run, replay or compare --out DIR)");
  }
  nlohmann::json runs;
  try {
    runs = nlohmann::json::parse(read_file(summary_path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(summary_path, "", std::string("malformed JSON: ") + e.what());
  }
  if (runs.is_object() && runs.contains("levels")) return report_compare(dir, runs);
  if (!runs.is_array() || runs.empty() ||
      !std::all_of(runs.begin(), runs.end(), [](const nlohmann::json& r) { return r.is_object(); })) {
    throw InputError(summary_path, "",
                     "expected a list of one or more runs, each an object with policy, mode, total_s and energy_j "
                     "(colo simulate, run or replay --out), or a colo compare summary (an object with levels)");
  }
  TablePrinter table({{"policy", 11}, {"mode", 9}, {"jobs", 6}, {"total_h", 8}, {"energy_kwh", 10},
                      {"jct_min", 8}, {"ooms", 5}, {"lost", 4}});
  table.header();
  for (const auto& r : runs) {
    table.row({r.value("policy", "?"), r.value("mode", "?"), std::to_string(r.value("jobs", 0)),
               fixed(r.value("total_s", 0.0) / 3600, 2), fixed(r.value("energy_j", 0.0) / 3.6e6, 2),
               fixed(r.value("mean_jct_s", 0.0) / 60, 1), std::to_string(r.value("oom_events", 0)),
               std::to_string(r.value("jobs_lost", 0))});
  }
  print_schedules(dir);
  return draw_plots("report", dir);
}

void add_report_command(CLI::App& app, int& exit_code) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("report", "Table and PNG plots (Gantt, policies, GPU timeline) of a results directory");
  cmd->add_option("dir", *dir, "directory written by colo simulate, run, replay or compare --out (monitor CSVs in it are plotted too)")->required();
  cmd->callback([dir, &exit_code] { exit_code = run_report(*dir); });
}

}  // namespace colo::cli
