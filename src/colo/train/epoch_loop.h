#pragma once
// The epoch bookkeeping every training loop shares — `colo train`, fused
// arrays and data-parallel workers: the step budget, test-split evaluation
// and the per-epoch record.

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "colo/data/loader.h"
#include "colo/train/epoch_record.h"
#include "colo/train/train_spec.h"

namespace colo::train {

// Optimiser steps a run takes: every epoch's batches, capped by
// `spec.max_steps` when that is positive.
int64_t planned_steps(const TrainSpec& spec, int64_t batches_per_epoch);

// One model's result on the test split.
struct TestResult {
  double accuracy = 0;  // fraction in [0, 1]
  double loss = 0;      // mean cross-entropy per sample
};

// Runs `forward` over every batch `loader` gives (starting its epoch 0) with
// gradients off, and scores the logits it returns: [B, C] for one model, or
// [M, B, C] for M models that see the same batch. Returns one result per
// model. Eval/train mode is the caller's to set.
std::vector<TestResult> evaluate_logits(const std::function<at::Tensor(const at::Tensor&)>& forward,
                                        data::DataLoader& loader);

// What one model's epoch of training measured.
struct EpochTotals {
  int64_t epoch = 0;      // 0-based epoch just finished
  int64_t step = 0;       // optimiser steps so far
  double loss_sum = 0;    // training loss summed over samples
  int64_t correct = 0;    // training predictions that were right
  int64_t samples = 0;    // training samples seen this epoch
  double train_s = 0;     // training time, evaluation excluded
  double lr = 0;          // learning rate at the epoch's last step
};

// The record of an epoch: means over its samples, the test result, the
// device's allocator peaks (CUDA only) and the clocks given.
EpochRecord epoch_record(const EpochTotals& totals, const TestResult& test, c10::Device device,
                         double epoch_s, double wall_s);

}  // namespace colo::train
