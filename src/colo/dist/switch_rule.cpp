#include "colo/dist/switch_rule.h"

#include <cmath>

namespace colo::dist {

bool PlateauDetector::observe(double loss) {
  if (fired_) return true;
  ema_ = steps_ == 0 ? loss : rule_.smoothing * ema_ + (1 - rule_.smoothing) * loss;
  ++steps_;
  smoothed_.push_back(ema_);
  if (static_cast<int64_t>(smoothed_.size()) > rule_.window + 1) smoothed_.pop_front();
  if (static_cast<int64_t>(smoothed_.size()) <= rule_.window) return false;
  double before = smoothed_.front();
  improvement_ = before != 0 ? (before - ema_) / std::fabs(before) : 0;
  if (steps_ >= rule_.min_steps && improvement_ < rule_.min_improvement) fired_ = true;
  return fired_;
}

}  // namespace colo::dist
