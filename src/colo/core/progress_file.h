#pragma once
// A training job's throughput as it reports it to the scheduler that started
// it. The runner names a file in $COLO_PROGRESS_FILE; the job (colo train, or
// a Python loop through colo.report_progress) rewrites it, atomically, with
// how many samples it has trained, for how long, and when (unix seconds):
//     {"samples": 51200, "train_s": 12.5, "at": 1795000000.25, "data_wait_s": 0.4}
// ("data_wait_s" optional: seconds of train_s spent waiting for data).
// The runner reads it while the job runs (sched/job_progress.h); colo compare
// reads it often enough to see each write, and times the training from "at".

#include <cstdint>
#include <optional>
#include <string>

#include "colo/core/start_together.h"
#include "colo/core/stopwatch.h"

namespace colo {

// The environment variable that names a job's progress file.
inline constexpr const char* kProgressFileVariable = "COLO_PROGRESS_FILE";
// Seconds between writes, when the reader wants them oftener than once a second.
inline constexpr const char* kProgressIntervalVariable = "COLO_PROGRESS_INTERVAL_S";

struct ProgressReading {
  int64_t samples = 0;   // training samples done since the job started
  double train_s = 0;    // seconds spent training them (evaluation left out)
  double at_unix_s = 0;  // when the job wrote it; 0 when the file does not say
  // Seconds of train_s spent waiting for data (a shared loader's consumer
  // reports it); nullopt when the file does not say.
  std::optional<double> data_wait_s = std::nullopt;
};

// The reading in `path`; nullopt when the file is missing, partial or not a
// progress file (never throws).
std::optional<ProgressReading> read_progress_file(const std::string& path);

// Writes $COLO_PROGRESS_FILE on the first update, then at most once per
// `interval_s` ($COLO_PROGRESS_INTERVAL_S overrides it) and on flush(), with
// the time of writing;
// does nothing when the variable is unset. A write that fails is dropped:
// progress is advisory and must not stop training. The first update first
// waits for the process's start-together group, when it has one
// (start_together.h); later updates' train_s, timed on a clock that ran
// through that wait, have it taken out. Not thread-safe.
class ProgressWriter {
 public:
  explicit ProgressWriter(double interval_s = 1.0);
  // Records the totals so far; writes them when the interval has passed.
  void update(const ProgressReading& reading);
  // Writes the last totals now.
  void flush();
  bool enabled() const { return !path_.empty(); }
  // Whether the next update() will write: a caller whose device runs behind
  // it may wait for the device first, so the figures say what is done.
  bool due() const { return enabled() && (!written_ || since_write_.elapsed_s() >= interval_s_); }

 private:
  std::string path_;
  double interval_s_;
  Stopwatch since_write_;
  ProgressReading last_;
  StartTogether together_;
  bool joined_ = false;
  double waited_s_ = 0;  // at the start-together group
  bool unwritten_ = false;
  bool written_ = false;
};

}  // namespace colo
