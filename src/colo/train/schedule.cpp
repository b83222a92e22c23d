#include "colo/train/schedule.h"

#include <algorithm>
#include <cmath>

namespace colo::train {

ScheduleSpec parse_schedule_spec(const SpecTable* table) {
  ScheduleSpec spec;
  if (table == nullptr) return spec;
  const SpecTable& t = *table;
  spec.name = t.choice_or("name", spec.name, {"constant", "step", "cosine"});
  spec.warmup_epochs = t.number_or("warmup_epochs", spec.warmup_epochs, 0.0, 1e6);
  if (spec.name == "step") {
    spec.step_epochs = t.number_or("step_epochs", spec.step_epochs, 1e-6, 1e6);
    spec.gamma = t.number_or("gamma", spec.gamma, 0.0, 1.0);
  }
  if (spec.name == "cosine") spec.min_lr = t.number_or("min_lr", spec.min_lr, 0.0, 1e3);
  t.reject_unknown();
  return spec;
}

LearningRateSchedule::LearningRateSchedule(const ScheduleSpec& spec, double base_lr,
                                           int64_t steps_per_epoch, int64_t total_steps)
    : spec_(spec),
      base_lr_(base_lr),
      warmup_steps_(std::llround(spec.warmup_epochs * static_cast<double>(steps_per_epoch))),
      step_steps_(std::max<int64_t>(1, std::llround(spec.step_epochs * static_cast<double>(steps_per_epoch)))),
      total_steps_(std::max<int64_t>(1, total_steps)) {}

double LearningRateSchedule::lr_at(int64_t step) const {
  if (step < warmup_steps_) {
    return base_lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_steps_);
  }
  if (spec_.name == "step") {
    return base_lr_ * std::pow(spec_.gamma, static_cast<double>(step / step_steps_));
  }
  if (spec_.name == "cosine") {
    int64_t span = std::max<int64_t>(1, total_steps_ - warmup_steps_);
    double progress = std::min(1.0, static_cast<double>(step - warmup_steps_) / static_cast<double>(span));
    return spec_.min_lr + 0.5 * (base_lr_ - spec_.min_lr) * (1.0 + std::cos(M_PI * progress));
  }
  return base_lr_;
}

}  // namespace colo::train
