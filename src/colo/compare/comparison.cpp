#include "colo/compare/comparison.h"

#include <cstdio>
#include <sstream>

#include "colo/compare/summary.h"
#include "colo/compare/workload.h"
#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/table.h"
#include "colo/gpu/device.h"

namespace colo::compare {
namespace {

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
               last_ok ? fixed(last_ok->wall_s, 1) : "-", level_note(l)});
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

}  // namespace

bool run_comparison(const ComparisonOptions& args) {
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
        std::string together = run.start_spread_s ? "; processes began training together, their start-ups " +
                                                        fixed(*run.start_spread_s, 1) + " s apart"
                                                  : "";
        std::fprintf(stderr, "colo compare:   %s%.0f samples/s over %.1f s of wall time%s%s%s\n", training.c_str(),
                     run.wall_samples_per_s, run.wall_s,
                     run.energy_j ? (", " + fixed(*run.energy_j, 0) + " J").c_str() : "",
                     run.stopped_at_budget ? " (stopped at the time limit)" : "", together.c_str());
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
  return speed.best.has_value();
}


}  // namespace colo::compare
