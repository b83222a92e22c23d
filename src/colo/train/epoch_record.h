#pragma once
// What the trainer reports after each epoch.

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace colo::train {

struct EpochRecord {
  int64_t epoch = 0;          // 1-based
  int64_t step = 0;           // optimiser steps so far
  double loss = 0;            // mean training loss over the epoch
  double train_accuracy = 0;  // fraction in [0, 1], measured during the epoch
  double test_loss = 0;
  double test_accuracy = 0;   // fraction in [0, 1]
  double samples_per_s = 0;   // training samples over training time (no evaluation)
  double epoch_s = 0;         // this epoch, evaluation included
  double wall_s = 0;          // since the run (or its resumption) started
  double lr = 0;              // learning rate at the epoch's last step
  std::optional<int64_t> peak_mem_bytes;       // CUDA: allocator peak during the epoch
  std::optional<int64_t> peak_reserved_bytes;  // CUDA: reserved peak during the epoch
  // Shared loader's data only: seconds of this epoch's training spent
  // waiting for the producer, and their share of its training time.
  std::optional<double> data_wait_s;
  std::optional<double> data_wait_pct;
};

nlohmann::json to_json(const EpochRecord& record);

}  // namespace colo::train
