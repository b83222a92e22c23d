#include "colo/compare/summary.h"

#include <algorithm>

#include "colo/core/table.h"

namespace colo::compare {
namespace {

std::optional<double> measure_of(const LevelRun& run, const std::string& measure) {
  if (measure == "samples_per_s") return run.samples_per_s;
  if (measure == "normalised_throughput") return run.normalised_throughput;
  if (measure == "alone_s_per_j") return run.alone_s_per_j;
  return run.samples_per_j;
}

struct SpreadOf {
  const std::optional<double>* median;
  const std::optional<double>* min;
  const std::optional<double>* max;
};

SpreadOf spread_of(const LevelResults& l, const std::string& measure) {
  if (measure == "samples_per_s") return {&l.median_samples_per_s, &l.min_samples_per_s, &l.max_samples_per_s};
  if (measure == "normalised_throughput") return {&l.median_normalised, &l.min_normalised, &l.max_normalised};
  if (measure == "alone_s_per_j") return {&l.median_alone_s_per_j, &l.min_alone_s_per_j, &l.max_alone_s_per_j};
  return {&l.median_samples_per_j, &l.min_samples_per_j, &l.max_samples_per_j};
}

std::string unit_of(const std::string& measure) {
  if (measure == "samples_per_s") return "throughput";
  if (measure == "normalised_throughput") return "throughput (each job's rate over its rate alone, summed)";
  if (measure == "alone_s_per_j") return "energy (each job's alone-seconds of training per joule)";
  return "energy (samples per joule)";
}

// Median (the upper one of an even count), min and max of the values present.
void spread(const std::vector<LevelRun>& runs, const std::string& measure, std::optional<double>* median,
            std::optional<double>* lo, std::optional<double>* hi) {
  std::vector<double> values;
  for (const LevelRun& run : runs) {
    if (run.ok) {
      if (auto v = measure_of(run, measure)) values.push_back(*v);
    }
  }
  if (values.empty()) return;
  std::sort(values.begin(), values.end());
  *median = values[values.size() / 2];
  *lo = values.front();
  *hi = values.back();
}

}  // namespace

void summarise(LevelResults& r) {
  spread(r.runs, "samples_per_s", &r.median_samples_per_s, &r.min_samples_per_s, &r.max_samples_per_s);
  spread(r.runs, "samples_per_j", &r.median_samples_per_j, &r.min_samples_per_j, &r.max_samples_per_j);
  spread(r.runs, "normalised_throughput", &r.median_normalised, &r.min_normalised, &r.max_normalised);
  spread(r.runs, "alone_s_per_j", &r.median_alone_s_per_j, &r.min_alone_s_per_j, &r.max_alone_s_per_j);
  for (const LevelRun& run : r.runs) {
    if (!run.ok && r.failure.empty()) r.failure = run.error;
  }
}

Recommendation recommend(const std::vector<LevelResults>& levels, const std::string& measure,
                         double single_run_noise) {
  Recommendation rec;
  rec.measure = measure;
  auto median = [&](const LevelResults& l) { return *spread_of(l, measure).median; };
  std::vector<const LevelResults*> ranked;
  for (const LevelResults& l : levels) {
    if (median(l)) ranked.push_back(&l);
  }
  const std::string unit = unit_of(measure);
  if (ranked.empty()) {
    rec.reason = "for " + unit + ": none (no level measured it)";
    return rec;
  }
  std::sort(ranked.begin(), ranked.end(), [&](const auto* a, const auto* b) { return *median(*a) > *median(*b); });
  const LevelResults& best = *ranked[0];
  rec.best = best.level;
  if (ranked.size() == 1) {
    rec.recommended = best.level;
    rec.reason = "for " + unit + ": " + to_string(best.level) + " (the only level measured)";
    return rec;
  }
  const LevelResults& next = *ranked[1];
  rec.runner_up = next.level;
  rec.margin = *median(best) / *median(next) - 1;
  size_t best_rounds = 0, next_rounds = 0;
  for (const LevelRun& run : best.runs) best_rounds += run.ok ? 1 : 0;
  for (const LevelRun& run : next.runs) next_rounds += run.ok ? 1 : 0;
  if (best_rounds > 1 && next_rounds > 1) {
    double best_low = **spread_of(best, measure).min;
    double next_high = **spread_of(next, measure).max;
    rec.within_noise = next_high >= best_low;
  } else {
    rec.within_noise = rec.margin < single_run_noise;
  }
  if (!rec.within_noise) {
    rec.recommended = best.level;
    rec.reason = "for " + unit + ": " + to_string(best.level) + ", " + percent(rec.margin) + " ahead of " +
                 to_string(next.level);
    return rec;
  }
  rec.reason = "for " + unit + ": none; " + to_string(best.level) + " leads " + to_string(next.level) + " by " +
               percent(rec.margin) +
               (best_rounds > 1 && next_rounds > 1
                    ? ", within noise (their rounds overlap)"
                    : ", within noise (one round each, under " + percent(single_run_noise, 0) + "; use --repeat)");
  return rec;
}

std::pair<std::string, std::string> ranking_measures(const std::vector<LevelResults>& levels,
                                                     const std::string& kind) {
  if (kind != "jobs") return {"samples_per_s", "samples_per_j"};
  bool any = false;
  for (const LevelResults& l : levels) {
    for (const LevelRun& run : l.runs) {
      if (!run.ok) continue;
      if (!run.normalised_throughput) return {"samples_per_s", "samples_per_j"};
      any = true;
    }
  }
  if (!any) return {"samples_per_s", "samples_per_j"};
  return {"normalised_throughput", "alone_s_per_j"};
}

std::string level_note(const LevelResults& l) {
  if (!l.failure.empty()) return "failed: " + l.failure;
  // Only where every process starts at once is a missing steady state a
  // short workload's doing; slots and the scheduler stagger their starts.
  const bool starts_together = l.level == ShareLevel::kTimeslice || l.level == ShareLevel::kMps;
  const LevelRun* last_ok = nullptr;
  size_t ok = 0, ramps = 0;
  for (const LevelRun& run : l.runs) {
    if (!run.ok) continue;
    last_ok = &run;
    ++ok;
    if (starts_together && run.basis == ThroughputBasis::kTraining && !run.train_full_occupancy) ++ramps;
  }
  std::vector<std::string> notes;
  if (last_ok && last_ok->stopped_at_budget) notes.push_back("stopped at --level-timeout: measured up to there");
  if (ramps > 0) {
    notes.push_back(std::to_string(ramps) + " of " + std::to_string(ok) +
                    " round(s) without a steady state (its processes trained all at once too briefly): measured "
                    "with start-up ramps, so low; raise --steps");
  }
  std::string joined;
  for (const std::string& n : notes) joined += (joined.empty() ? "" : "; ") + n;
  return joined;
}

nlohmann::json to_json(const LevelResults& r) {
  nlohmann::json j = {{"level", to_string(r.level)}};
  if (!r.skipped.empty()) {
    j["skipped"] = r.skipped;
    return j;
  }
  auto put = [&](const char* key, const std::optional<double>& v) {
    if (v) j[key] = *v;
  };
  put("samples_per_s", r.median_samples_per_s);
  put("samples_per_s_min", r.min_samples_per_s);
  put("samples_per_s_max", r.max_samples_per_s);
  put("samples_per_j", r.median_samples_per_j);
  put("samples_per_j_min", r.min_samples_per_j);
  put("samples_per_j_max", r.max_samples_per_j);
  put("normalised_throughput", r.median_normalised);
  put("normalised_throughput_min", r.min_normalised);
  put("normalised_throughput_max", r.max_normalised);
  put("alone_s_per_j", r.median_alone_s_per_j);
  put("alone_s_per_j_min", r.min_alone_s_per_j);
  put("alone_s_per_j_max", r.max_alone_s_per_j);
  if (!r.failure.empty()) j["failure"] = r.failure;
  j["runs"] = nlohmann::json::array();
  for (const LevelRun& run : r.runs) j["runs"].push_back(to_json(run));
  if (!r.warmup.empty()) {
    j["warmup_runs"] = nlohmann::json::array();
    for (const LevelRun& run : r.warmup) j["warmup_runs"].push_back(to_json(run));
  }
  return j;
}

nlohmann::json to_json(const Recommendation& r) {
  nlohmann::json j = {{"measure", r.measure}, {"margin", r.margin}, {"within_noise", r.within_noise},
                      {"reason", r.reason}};
  j["best"] = r.best ? nlohmann::json(to_string(*r.best)) : nlohmann::json(nullptr);
  j["runner_up"] = r.runner_up ? nlohmann::json(to_string(*r.runner_up)) : nlohmann::json(nullptr);
  j["recommended"] = r.recommended ? nlohmann::json(to_string(*r.recommended)) : nlohmann::json(nullptr);
  return j;
}

}  // namespace colo::compare
