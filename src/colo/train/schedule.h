#pragma once
// Learning-rate schedules: constant, step, cosine, each with linear warm-up.

#include <cstdint>
#include <string>

#include "colo/core/spec_table.h"

namespace colo::train {

// The [schedule] table. Lengths are in epochs; the trainer converts them to
// optimiser steps.
struct ScheduleSpec {
  std::string name = "constant";  // constant | step | cosine
  double warmup_epochs = 0.0;     // linear ramp from 0 to the base rate
  double step_epochs = 30.0;      // step: multiply by gamma every step_epochs
  double gamma = 0.1;             // step
  double min_lr = 0.0;            // cosine: rate at the end
};

// Reads a [schedule] table (absent: constant); throws InputError.
ScheduleSpec parse_schedule_spec(const SpecTable* table);

// Learning rate as a function of the optimiser step. Pure; thread-safe.
class LearningRateSchedule {
 public:
  LearningRateSchedule(const ScheduleSpec& spec, double base_lr, int64_t steps_per_epoch,
                       int64_t total_steps);

  // Rate for optimiser step `step` (0-based).
  double lr_at(int64_t step) const;

 private:
  ScheduleSpec spec_;
  double base_lr_;
  int64_t warmup_steps_;
  int64_t step_steps_;
  int64_t total_steps_;
};

}  // namespace colo::train
