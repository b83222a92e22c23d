#include "colo/cli/compare_command.h"

#include <cstdio>
#include <memory>
#include <sstream>

#include "colo/cli/compare_levels.h"
#include "colo/cli/compare_summary.h"
#include "colo/cli/compare_workload.h"
#include "colo/cli/plot_script.h"
#include "colo/core/error.h"
#include "colo/core/paths.h"
#include "colo/core/table.h"
#include "colo/gpu/device.h"

namespace colo::cli {
namespace {

struct CompareArgs {
  std::string workload;
  std::string levels;      // comma-separated; empty = all
  std::string out = "runs/compare";
  int64_t steps = 0;
  int repeat = 1;
  int warmup = 0;          // rounds run first and left out of the figures
  bool plots = true;
  LevelOptions level;
};

std::vector<ShareLevel> chosen_levels(const std::string& list) {
  if (list.empty()) return all_share_levels();
  std::vector<ShareLevel> levels;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    try {
      levels.push_back(share_level_from_string(name));
    } catch (const std::invalid_argument& e) {
      throw InputError("--levels", "", e.what());
    }
  }
  return levels;
}

std::string range_cell(const std::optional<double>& median, const std::optional<double>& lo,
                       const std::optional<double>& hi, int decimals, size_t rounds) {
  if (!median) return "-";
  std::string cell = fixed(*median, decimals);
  if (rounds > 1) cell += " (" + fixed(*lo, decimals) + "-" + fixed(*hi, decimals) + ")";
  return cell;
}

std::string level_note(const LevelResults& l, const LevelRun* last_ok) {
  if (!l.failure.empty()) return "failed: " + l.failure;
  if (last_ok && last_ok->stopped_at_budget) return "stopped at --level-timeout: measured up to there";
  return "";
}

void print_table(const std::vector<LevelResults>& levels, size_t rounds) {
  TablePrinter table({{"level", 10}, {"samples/s", 24}, {"samples/J", 20}, {"x alone", 16}, {"SM", 6},
                      {"peak mem", 10}, {"wall s", 8}, {"note", 0}});
  table.header();
  for (const LevelResults& l : levels) {
    if (!l.skipped.empty()) {
      table.row({to_string(l.level), "-", "-", "-", "-", "-", "-", "skipped: " + l.skipped});
      continue;
    }
    const LevelRun* last_ok = nullptr;
    for (const LevelRun& run : l.runs) {
      if (run.ok) last_ok = &run;
    }
    table.row({to_string(l.level),
               range_cell(l.median_samples_per_s, l.min_samples_per_s, l.max_samples_per_s, 0, rounds),
               range_cell(l.median_samples_per_j, l.min_samples_per_j, l.max_samples_per_j, 1, rounds),
               range_cell(l.median_normalised, l.min_normalised, l.max_normalised, 2, rounds),
               last_ok && last_ok->mean_sm ? percent(*last_ok->mean_sm, 0) : "-",
               last_ok && last_ok->peak_mem_bytes ? bytes_human(static_cast<double>(*last_ok->peak_mem_bytes)) : "-",
               last_ok ? fixed(last_ok->wall_s, 1) : "-", level_note(l, last_ok)});
  }
}

// Weighs the round just run (each level's last run, or last warm-up run)
// by the same round's sequential run: each job's throughput alone.
void normalise_round(std::vector<LevelResults>& levels, bool warming) {
  const LevelRun* sequential = nullptr;
  for (const LevelResults& r : levels) {
    const auto& runs = warming ? r.warmup : r.runs;
    if (r.level == ShareLevel::kSequential && !runs.empty() && runs.back().ok) sequential = &runs.back();
  }
  if (!sequential) return;
  for (LevelResults& r : levels) {
    auto& runs = warming ? r.warmup : r.runs;
    if (!runs.empty()) normalise_against(runs.back(), *sequential);
  }
}

// Training figures when every measured run has them, else wall figures:
// levels are only compared on one basis.
ThroughputBasis common_basis(const std::vector<LevelResults>& levels) {
  for (const LevelResults& r : levels) {
    for (const LevelRun& run : r.runs) {
      if (run.ok && !run.train_samples_per_s) return ThroughputBasis::kWall;
    }
  }
  return ThroughputBasis::kTraining;
}

int run_compare(const CompareArgs& args) {
  if (args.repeat < 1) throw InputError("--repeat", "", "at least 1");
  std::vector<ShareLevel> wanted = chosen_levels(args.levels);
  CompareWorkload workload = parse_compare_workload(args.workload, this_program_path(), args.steps);
  ensure_writable_dir(args.out, "--out", "");
  std::vector<gpu::DevicePtr> devices = gpu::discover_devices();
  std::fprintf(stderr, "colo compare: %s (%s, %zu jobs) on %zu GPU(s), %d round(s); results in %s\n",
               args.workload.c_str(), workload.kind.c_str(), workload.jobs.size(), devices.size(), args.repeat,
               args.out.c_str());

  std::vector<LevelResults> levels;
  for (ShareLevel level : wanted) {
    LevelResults r;
    r.level = level;
    r.skipped = level_unavailable(level, workload, !devices.empty(), args.level);
    levels.push_back(r);
  }
  // Rounds interleave the levels, so a slow spell of the machine hits all.
  // Warm-up rounds come first: a machine's first round pays cold caches.
  for (int round = -args.warmup; round < args.repeat; ++round) {
    bool warming = round < 0;
    for (LevelResults& r : levels) {
      if (!r.skipped.empty()) continue;
      LevelOptions options = args.level;
      options.out_dir = args.out + (warming ? "/warmup-" + std::to_string(round + args.warmup + 1)
                                            : "/round-" + std::to_string(round + 1));
      if (warming) {
        std::fprintf(stderr, "colo compare: warm-up %d/%d, %s ...\n", round + args.warmup + 1, args.warmup,
                     to_string(r.level).c_str());
      } else {
        std::fprintf(stderr, "colo compare: round %d/%d, %s ...\n", round + 1, args.repeat,
                     to_string(r.level).c_str());
      }
      LevelRun run = run_share_level(r.level, workload, devices, options);
      if (run.ok) {
        std::string training = run.train_samples_per_s
                                   ? fixed(*run.train_samples_per_s, 0) + " samples/s training, "
                                   : "";
        std::fprintf(stderr, "colo compare:   %s%.0f samples/s over %.1f s of wall time%s%s\n", training.c_str(),
                     run.wall_samples_per_s, run.wall_s,
                     run.energy_j ? (", " + fixed(*run.energy_j, 0) + " J").c_str() : "",
                     run.stopped_at_budget ? " (stopped at the time limit)" : "");
      } else {
        std::fprintf(stderr, "colo compare:   failed: %s\n", run.error.c_str());
      }
      (warming ? r.warmup : r.runs).push_back(std::move(run));
    }
    normalise_round(levels, warming);
  }
  ThroughputBasis basis = common_basis(levels);
  for (LevelResults& r : levels) {
    for (LevelRun& run : r.runs) {
      if (run.ok) use_basis(run, basis);
    }
    summarise(r);
  }
  print_table(levels, static_cast<size_t>(args.repeat));
  std::printf("%s\n", basis == ThroughputBasis::kTraining
                          ? "samples/s and samples/J: over the time the jobs trained, start-up and warm-up left out "
                            "(wall s: first start to last end)"
                          : "samples/s and samples/J: over the wall time, start-up included (not every job "
                            "reports its progress through $COLO_PROGRESS_FILE)");
  auto [speed_measure, energy_measure] = ranking_measures(levels, workload.kind);
  bool normalised = false;
  for (const LevelResults& l : levels) normalised = normalised || l.median_normalised.has_value();
  if (normalised) std::printf("x alone: alone-seconds of training done (each job's samples over its throughput in the sequential "
              "level) per second the level trained%s\n",
              speed_measure == "normalised_throughput" ? "; the recommendations rank by it and its per-joule "
                                                         "figure, as the jobs may differ in cost"
                                                       : "");
  Recommendation speed = recommend(levels, speed_measure);
  Recommendation energy = recommend(levels, energy_measure);
  std::printf("recommended %s\nrecommended %s\n", speed.reason.c_str(), energy.reason.c_str());

  nlohmann::json summary = {{"workload", args.workload},     {"kind", workload.kind},
                            {"jobs", workload.jobs.size()},   {"gpus", devices.size()},
                            {"rounds", args.repeat},          {"warmup_rounds", args.warmup},
                            {"slots", args.level.slots},
                            {"steps", args.steps},            {"basis", to_string(basis)},
                            {"levels", nlohmann::json::array()},
                            {"recommended_for_throughput", to_json(speed)},
                            {"recommended_for_energy", to_json(energy)}};
  for (const LevelResults& r : levels) summary["levels"].push_back(to_json(r));
  write_file_atomically(args.out + "/summary.json", summary.dump(1) + "\n");
  std::printf("summary: %s/summary.json\n", args.out.c_str());
  if (args.plots) {
    ProcessResult plots = run_plot_script("compare", args.out);
    std::printf("%s", plots.output.c_str());
    if (plots.exit_code != 0) std::fprintf(stderr, "colo compare: plotting failed (matplotlib missing?)\n");
  }
  bool any = speed.best.has_value();
  return any ? 0 : 1;
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Run one workload at every level of GPU sharing; recommend the best for throughput and energy");
  cmd->add_option("workload", args->workload,
                  "a sweep file, a job file whose jobs declare `samples`, or a Python script that calls "
                  "colo.fuse.compare_workload (docs/cli-compare.md)")
      ->required();
  cmd->add_option("--levels", args->levels,
                  "levels to run, comma-separated (default all): sequential, timeslice, mps, slots, scheduler, "
                  "fused, streams");
  cmd->add_option("--steps", args->steps, "sweep files: optimiser steps per model (default: the spec's epochs)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--slots", args->level.slots, "slots level: jobs per GPU at once, fixed up front")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--repeat", args->repeat, "rounds of every level (medians and spread reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--warmup", args->warmup,
                  "rounds of every level run first and left out of the figures (a first round pays cold caches)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10));
  cmd->add_option("--level-timeout", args->level.timeout_s, "seconds one level may run before it is stopped")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--out", args->out, "directory for summary.json, timelines, logs and PNGs")->capture_default_str();
  cmd->add_option("--mps-control", args->level.mps_control, "the MPS control program")->capture_default_str();
  cmd->add_flag("--no-plots", [args](int64_t) { args->plots = false; }, "skip the PNGs");
  cmd->footer(
      "\nEach level runs the whole workload, or what fits --level-timeout. Throughput is trained samples\n"
      "over the time the jobs trained past warm-up (from their progress reports), energy the GPUs'\n"
      "energy counters over that time; when a job reports no progress, both count the wall time from\n"
      "the first start to the last end.\n"
      "A level that cannot apply here is skipped with the reason; a failing level never stops the others.");
  cmd->callback([args, &exit_code] { exit_code = run_compare(*args); });
}

}  // namespace colo::cli
