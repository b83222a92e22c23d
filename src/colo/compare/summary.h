#pragma once
// What `colo compare` concludes from the measured runs of every level: each
// level's median and spread, and the recommended level with its margin.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/compare/levels.h"

namespace colo::compare {

// Every run of one level, or why it was skipped.
struct LevelResults {
  ShareLevel level = ShareLevel::kSequential;
  std::string skipped;          // non-empty: never run, and why
  std::vector<LevelRun> runs;   // one per round
  std::vector<LevelRun> warmup; // warm-up rounds: run first, kept out of the figures
  // Over the runs that succeeded (nullopt when none did):
  std::optional<double> median_samples_per_s, min_samples_per_s, max_samples_per_s;
  std::optional<double> median_samples_per_j, min_samples_per_j, max_samples_per_j;
  std::optional<double> median_normalised, min_normalised, max_normalised;          // LevelRun::normalised_throughput
  std::optional<double> median_alone_s_per_j, min_alone_s_per_j, max_alone_s_per_j;
  std::string failure;          // the first failed run's reason, if any
};

// Fills the medians and spreads from `results.runs`.
void summarise(LevelResults& results);

// The level that is best by a measure, and by how much it beats the next.
struct Recommendation {
  // "samples_per_s" | "samples_per_j" | "normalised_throughput" | "alone_s_per_j"
  std::string measure;
  std::optional<ShareLevel> best;
  std::optional<ShareLevel> runner_up;
  double margin = 0;            // best / runner-up - 1
  bool within_noise = false;    // the two cannot be told apart
  // The level recommended: the best one, only when its rounds and the
  // runner-up's do not overlap (or, with one round each, it leads by more
  // than the single-run noise); none when they cannot be told apart.
  std::optional<ShareLevel> recommended;
  std::string reason;           // one line saying which, and why
};

// The measures to rank by, throughput's then energy's. For a job file
// (`kind` "jobs": its jobs may be different models) the normalised ones
// when every measured run has them: they weigh each job's samples by what
// they cost alone, over the whole of each level's training. Otherwise (a
// sweep: one model, where steady-state samples/s rank alike) samples/s and
// samples/J.
std::pair<std::string, std::string> ranking_measures(const std::vector<LevelResults>& levels,
                                                     const std::string& kind);

// Best median by `measure` among the levels with results. With several
// rounds the best is within noise when the runner-up's best round reaches
// the best level's worst; with one round, when the margin is under
// `single_run_noise` (a fraction).
Recommendation recommend(const std::vector<LevelResults>& levels, const std::string& measure,
                         double single_run_noise = 0.05);

// The table's note on a level: why it failed, that its last round stopped
// at the time limit, or, for the levels that start every process at once
// (timeslice, mps), in how many rounds its processes never trained all at
// once for long enough to have a steady state (TrainingWindow): those
// rounds are measured over their spans, start-up ramps included, so they
// read low beside steady-state rounds. "" when there is nothing to say.
std::string level_note(const LevelResults& results);

nlohmann::json to_json(const LevelResults& results);
nlohmann::json to_json(const Recommendation& r);

}  // namespace colo::compare
