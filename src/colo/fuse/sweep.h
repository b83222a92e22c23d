#pragma once
// Runs a sweep: groups its configurations into fused arrays, trains the
// arrays one after another, and writes each model's results as if it had been
// trained alone.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/fuse/sweep_spec.h"

namespace colo::data {
class SharedBatches;
}

namespace colo::fuse {

struct SweepModelResult {
  int64_t index = 0;
  nlohmann::json values;         // the axis values this model took
  int64_t array = 0;             // which array trained it (0-based)
  int64_t epochs = 0;            // epochs trained (fewer when halving stopped it)
  bool stopped = false;          // stopped at a halving rung
  double test_accuracy = 0;      // at its last epoch
  double best_test_accuracy = 0;
  double loss = 0;               // training loss of its last epoch
};

struct SweepResult {
  std::vector<SweepModelResult> models;  // ranked: best last test accuracy first
  int64_t arrays = 0;
  std::vector<int64_t> array_sizes;
  double total_s = 0;
  std::string device;
};

// Writes under spec.base.output:
//   sweep.jsonl              one record per model per epoch (model, array, values, epoch record)
//   model-<k>/metrics.jsonl  model k's records, as `colo train` writes them
//   model-<k>/config.json    its axis values and effective hyper-parameters
//   model-<k>/model.pt       its final parameters (a models::Classifier archive)
//   results.json             the ranked results and totals
// Reports progress to `observer` (sweep_progress.h; null: printed to
// stdout). Throws InputError for bad input before training starts.
class SweepObserver;
SweepResult run_sweep(const SweepSpec& spec, SweepObserver* observer = nullptr);

// Models of `spec`'s architecture that fit one array on `device`: measured
// from the allocator peaks of one-model and two-model arrays over a few steps
// against the free memory (85% of it); 64 on the CPU. With `shared`, the
// probe's steps read the shared loader's batches.
int64_t array_capacity(const train::TrainSpec& spec, const data::Dataset& dataset,
                       const c10::Device& device, data::SharedBatches* shared = nullptr);

}  // namespace colo::fuse
