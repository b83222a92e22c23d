#pragma once
// One running job's training throughput, from the readings of its progress
// file (core/progress_file.h) at each of the runner's rounds, split into the
// time it had its GPUs to itself and the time it shared them. Its slowdown
// is its throughput alone over its throughput overall; the alone figure is
// its own where it ran alone long enough, else one learned from an earlier
// job of the same command or model.

#include <deque>
#include <optional>

#include "colo/core/progress_file.h"

namespace colo::sched {

class JobProgress {
 public:
  // Seconds of training alone below which the job's own alone throughput is
  // not trusted (a start-up transient).
  static constexpr double kMinAloneS = 2.0;

  // Feeds a reading taken now; `alone` says whether the job had its GPUs to
  // itself since the previous reading. A reading that goes backwards (a
  // restarted job) starts the accounts afresh.
  void observe(const ProgressReading& reading, bool alone);

  // Samples per training second over the whole run: between the first and
  // the last reading, or, from one reading, its samples over its training
  // seconds (the counts start with the job); nullopt before any training time.
  std::optional<double> samples_per_s() const;
  // Samples per training second while alone; nullopt below kMinAloneS,
  // unless the job was alone between all its readings (a short job that
  // ran alone: its whole run is its alone figure).
  std::optional<double> alone_samples_per_s() const;
  // Samples per training second over its last `window_s` of training;
  // nullopt until its readings span that long.
  std::optional<double> recent_samples_per_s(double window_s) const;
  // Its last reading; nullopt before any.
  const std::optional<ProgressReading>& last() const { return last_; }
  // Percent of its training time the job waited for data, as of its last
  // reading (a shared loader's consumer reports it); nullopt when it does
  // not say or has not trained yet.
  std::optional<double> data_wait_pct() const;

 private:
  std::optional<ProgressReading> first_, last_;
  std::deque<ProgressReading> recent_;  // readings of about the last minute of training
  double alone_samples_ = 0, alone_s_ = 0;
  double shared_s_ = 0;  // training seconds between readings not both alone
};

// Throughput alone over throughput overall (>= 1 when sharing slowed the
// job); nullopt when either is unknown or zero.
std::optional<double> slowdown(std::optional<double> alone_samples_per_s, std::optional<double> samples_per_s);

}  // namespace colo::sched
