#include "colo/fuse/sweep_progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "colo/core/table.h"
#include "colo/fuse/sweep.h"

namespace colo::fuse {
namespace {

// "-" where there is no test split (a shared loader's data).
std::string accuracy_cell(double accuracy, bool tested) {
  return tested && !std::isnan(accuracy) ? percent(accuracy, 2) : "-";
}

}  // namespace

void SweepConsole::on_start(size_t configurations, const std::string& model, const std::string& dataset,
                            const std::string& device) {
  std::printf("sweep: %zu configurations of %s on %s (%s)\n", configurations, model.c_str(), dataset.c_str(),
              device.c_str());
  std::fflush(stdout);
}

void SweepConsole::on_array(size_t array, size_t arrays, size_t models, const std::string& key) {
  std::printf("array %zu/%zu: %zu models (%s)\n", array + 1, arrays, models, key.c_str());
  std::fflush(stdout);
}

void SweepConsole::on_epoch(int64_t model, size_t, const train::EpochRecord& record) {
  if (record.epoch != last_epoch_) {
    flush_epoch();
    last_epoch_ = record.epoch;
    epoch_best_ = epoch_rate_ = 0;
    epoch_models_ = 0;
  }
  ++epoch_models_;
  epoch_rate_ += record.samples_per_s;
  // Without a test split (NaN), the best is by training accuracy.
  tested_ = !std::isnan(record.test_accuracy);
  double accuracy = tested_ ? record.test_accuracy : record.train_accuracy;
  if (accuracy >= epoch_best_) {
    epoch_best_ = accuracy;
    best_model_ = model;
  }
}

void SweepConsole::flush_epoch() {
  if (last_epoch_ == 0) return;
  std::printf("  epoch %lld/%lld: %lld models, best %s acc %s (model %lld), %.0f samples/s\n",
              static_cast<long long>(last_epoch_), static_cast<long long>(epochs_),
              static_cast<long long>(epoch_models_), tested_ ? "test" : "train", percent(epoch_best_, 2).c_str(),
              static_cast<long long>(best_model_), epoch_rate_);
  std::fflush(stdout);
  last_epoch_ = 0;
}

void SweepConsole::on_note(const std::string& text) {
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

void SweepConsole::on_done(const SweepResult& result) {
  TablePrinter table({{"rank", 4}, {"model", 5}, {"test acc", 8}, {"best acc", 8}, {"loss", 7},
                      {"epochs", 6}, {"array", 5}, {"values", 0}});
  table.header();
  int rank = 0;
  for (const auto& m : result.models) {
    const bool tested = !std::isnan(m.test_accuracy);
    table.row({std::to_string(++rank), std::to_string(m.index), accuracy_cell(m.test_accuracy, tested),
               accuracy_cell(m.best_test_accuracy, tested), fixed(m.loss, 4),
               std::to_string(m.epochs) + (m.stopped ? "*" : ""), std::to_string(m.array),
               m.values.dump()});
  }
  if (std::any_of(result.models.begin(), result.models.end(), [](const auto& m) { return m.stopped; })) {
    std::printf("* stopped at a halving rung\n");
  }
  std::printf("sweep: %zu models in %lld arrays, %.1f s\n", result.models.size(),
              static_cast<long long>(result.arrays), result.total_s);
  std::fflush(stdout);
}

}  // namespace colo::fuse
