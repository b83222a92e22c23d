#pragma once
// What a sweep writes and keeps for each model: its directory (config.json,
// metrics.jsonl, model.pt), the sweep's log (sweep.jsonl), its running
// result, and at the end the ranked results (results.json).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/core/json_lines.h"
#include "colo/fuse/sweep.h"
#include "colo/models/classifier.h"

namespace colo::fuse {

using SweepArrays = std::vector<std::vector<const SweepConfig*>>;

class SweepRecords {
 public:
  // Creates `output`/model-<k>/ with config.json and an empty metrics.jsonl
  // for every model of `arrays`, and an empty `output`/sweep.jsonl.
  SweepRecords(std::string output, const SweepArrays& arrays);

  // One model's epoch: to its metrics.jsonl, to sweep.jsonl, to its result.
  void record(size_t array, const SweepConfig& config, const train::EpochRecord& record);
  void stop(int64_t model) { results_[model].stopped = true; }
  bool stopped(int64_t model) const { return results_.at(model).stopped; }

  // Forgets what `configs` have recorded (their arrays are trained again).
  void restart(const std::vector<const SweepConfig*>& configs);
  // Which array each model is in, after the plan changed.
  void assign(const SweepArrays& arrays);
  // A line of sweep.jsonl that is not an epoch (e.g. {"event": "oom_split"}).
  void log_event(const nlohmann::json& event) { sweep_log_.write(event); }
  // model-<k>/model.pt.
  void save_model(int64_t model, const models::Classifier& classifier) const;

  // The ranked results (best last test accuracy first), written to results.json.
  SweepResult finish(const SweepArrays& arrays, double total_s, const std::string& device) const;

 private:
  std::string model_dir(int64_t model) const { return output_ + "/model-" + std::to_string(model); }
  std::string output_;
  JsonLinesWriter sweep_log_;
  std::map<int64_t, std::unique_ptr<JsonLinesWriter>> metrics_;
  std::map<int64_t, SweepModelResult> results_;
};

}  // namespace colo::fuse
