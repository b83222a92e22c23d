#pragma once
// A training job's throughput as it reports it to the scheduler that started
// it. The runner names a file in $COLO_PROGRESS_FILE; the job (colo train, or
// a Python loop through colo.report_progress) rewrites it, atomically, with
// how many samples it has trained and for how long:
//     {"samples": 51200, "train_s": 12.5}
// The runner reads it while the job runs (sched/job_progress.h).

#include <cstdint>
#include <optional>
#include <string>

#include "colo/core/stopwatch.h"

namespace colo {

// The environment variable that names a job's progress file.
inline constexpr const char* kProgressFileVariable = "COLO_PROGRESS_FILE";

struct ProgressReading {
  int64_t samples = 0;   // training samples done since the job started
  double train_s = 0;    // seconds spent training them (evaluation left out)
};

// The reading in `path`; nullopt when the file is missing, partial or not a
// progress file (never throws).
std::optional<ProgressReading> read_progress_file(const std::string& path);

// Writes $COLO_PROGRESS_FILE on the first update, then at most once per
// `interval_s` (and on flush());
// does nothing when the variable is unset. A write that fails is dropped:
// progress is advisory and must not stop training. Not thread-safe.
class ProgressWriter {
 public:
  explicit ProgressWriter(double interval_s = 1.0);
  // Records the totals so far; writes them when the interval has passed.
  void update(const ProgressReading& reading);
  // Writes the last totals now.
  void flush();
  bool enabled() const { return !path_.empty(); }

 private:
  std::string path_;
  double interval_s_;
  Stopwatch since_write_;
  ProgressReading last_;
  bool unwritten_ = false;
  bool written_ = false;
};

}  // namespace colo
