#include "colo/sched/job_progress.h"

#include <algorithm>

namespace colo::sched {

void JobProgress::observe(const ProgressReading& reading, bool alone) {
  if (last_ && (reading.samples < last_->samples || reading.train_s < last_->train_s)) {
    *this = JobProgress();
  }
  if (!first_) first_ = reading;
  if (last_ && alone) {
    alone_samples_ += static_cast<double>(reading.samples - last_->samples);
    alone_s_ += reading.train_s - last_->train_s;
  } else if (last_) {
    shared_s_ += reading.train_s - last_->train_s;
  }
  last_ = reading;
  recent_.push_back(reading);
  while (recent_.size() > 2 && recent_[1].train_s <= reading.train_s - 60) recent_.pop_front();
}

std::optional<double> JobProgress::data_wait_pct() const {
  if (!last_ || !last_->data_wait_s || last_->train_s <= 0) return std::nullopt;
  return 100.0 * std::min(*last_->data_wait_s, last_->train_s) / last_->train_s;
}

std::optional<double> JobProgress::recent_samples_per_s(double window_s) const {
  if (recent_.size() < 2) return std::nullopt;
  const ProgressReading& end = recent_.back();
  // The latest reading at least window_s before the last one.
  for (auto it = recent_.rbegin() + 1; it != recent_.rend(); ++it) {
    if (end.train_s - it->train_s >= window_s) {
      return static_cast<double>(end.samples - it->samples) / (end.train_s - it->train_s);
    }
  }
  return std::nullopt;
}

std::optional<double> JobProgress::samples_per_s() const {
  if (!first_ || !last_) return std::nullopt;
  // One reading (a job that ended between two rounds): its counts start at
  // zero with the job, so they are the whole run's.
  if (last_->train_s == first_->train_s && last_->samples == first_->samples) {
    if (last_->train_s <= 0) return std::nullopt;
    return static_cast<double>(last_->samples) / last_->train_s;
  }
  if (last_->train_s <= first_->train_s) return std::nullopt;
  return static_cast<double>(last_->samples - first_->samples) / (last_->train_s - first_->train_s);
}

std::optional<double> JobProgress::alone_samples_per_s() const {
  bool alone_throughout = shared_s_ == 0 && alone_s_ > 0;
  if (alone_s_ < kMinAloneS && !alone_throughout) return std::nullopt;
  return alone_samples_ / alone_s_;
}

std::optional<double> slowdown(std::optional<double> alone_samples_per_s, std::optional<double> samples_per_s) {
  if (!alone_samples_per_s || !samples_per_s || *alone_samples_per_s <= 0 || *samples_per_s <= 0) return std::nullopt;
  return *alone_samples_per_s / *samples_per_s;
}

}  // namespace colo::sched
