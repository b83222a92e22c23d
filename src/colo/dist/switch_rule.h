#pragma once
// When a switch strategy leaves all-reduce: once the training loss has
// settled. The loss is smoothed with an exponential moving average; the rule
// fires at the first step n >= max(min_steps, window) where the smoothed
// loss fell by less than `min_improvement` (a fraction) over the last
// `window` steps:
//     (s[n - window] - s[n]) / |s[n - window]| < min_improvement.
// In the spirit of Strategy-Switch (Provatas et al., 2025): synchronous
// updates while the loss still drops fast, asynchronous ones once the model
// has stabilised.

#include <cstdint>
#include <deque>

#include "colo/dist/cluster_spec.h"

namespace colo::dist {

class PlateauDetector {
 public:
  explicit PlateauDetector(const SwitchRule& rule) : rule_(rule) {}
  // Feeds the loss of the next step; true from the step the rule fires on.
  bool observe(double loss);
  bool fired() const { return fired_; }
  int64_t steps() const { return steps_; }
  // The relative improvement over the window at the last step (0 before a full window).
  double last_improvement() const { return improvement_; }

 private:
  SwitchRule rule_;
  std::deque<double> smoothed_;  // the last window + 1 smoothed values
  double ema_ = 0;
  int64_t steps_ = 0;
  double improvement_ = 0;
  bool fired_ = false;
};

}  // namespace colo::dist
