#pragma once
// How `colo compare` times training apart from start-up: every process of a
// level reports its progress through $COLO_PROGRESS_FILE (colo train, colo
// sweep, or a Python loop through colo.report_progress); a watcher keeps
// each write with its time, and the level's training throughput is the
// samples trained while some process was past its warm-up over the time
// that was so.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "colo/gpu/device.h"

namespace colo::compare {

// One write of a progress file: samples trained so far, the seconds spent
// training them (evaluation left out), and when.
struct TimedProgress {
  double unix_s = 0;
  int64_t samples = 0;
  double train_s = 0;
};

// Reads a fixed list of progress files every `interval_s` on its own thread
// and keeps every distinct write of each (files that do not exist yet are
// read again later). A count that falls (a process training in parts) adds
// to the parts before it, so each file's samples only grow. Stops, and
// reads once more, on stop() or destruction.
class ProgressWatch {
 public:
  explicit ProgressWatch(std::vector<std::string> paths, double interval_s = 0.05);
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  void stop();
  // The writes seen of file `i`, oldest first.
  std::vector<TimedProgress> readings(size_t i) const;
  size_t files() const { return paths_.size(); }

 private:
  void read_all();

  std::vector<std::string> paths_;
  double interval_s_;
  mutable std::mutex mutex_;
  struct Counted {
    int64_t last_written = 0;  // the file's own count at its last write
    double last_train_s = 0;
    int64_t carried = 0;       // samples and training seconds of the parts before it
    double carried_s = 0;
  };
  std::vector<std::vector<TimedProgress>> readings_;
  std::vector<Counted> counted_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// The part of a level's run in which it trained past warm-up.
struct TrainingWindow {
  int64_t samples = 0;                               // trained inside the intervals
  double seconds = 0;                                // length of the intervals
  std::vector<std::pair<double, double>> intervals;  // unix seconds, disjoint, sorted
  // Per process, in the order passed: samples trained inside `intervals`,
  // and over the whole of its own training spans, samples and seconds
  // (its throughput when it trains alone: sequential).
  std::vector<int64_t> process_samples;
  std::vector<int64_t> process_span_samples;
  std::vector<double> process_span_s;
  // The union of every process's training spans, whichever window is used.
  std::vector<std::pair<double, double>> union_intervals;
  double union_seconds = 0;
  size_t occupancy = 0;        // the most processes past their warm-up at once
  bool full_occupancy = false; // intervals are those in which that many trained
};

// The full-occupancy window must be at least this long, and this share of
// the union, to stand for the level; otherwise the union does.
inline constexpr double kMinFullOccupancySeconds = 1.0;
inline constexpr double kMinFullOccupancyShare = 0.25;

// Each process is timed from its first write at or past `warmup_fraction`
// of its last reported samples (never its very first write, which follows
// start-up and the first step) to its last write. Between two writes it
// trained for the growth of its train_s (at most the time between them):
// the rest of that gap, which comes first (evaluation at an epoch's end,
// then the next epoch's steps), is left out; the gap's samples are spread
// evenly over the part it trained.
//
// The level is measured in its steady state: while as many processes were
// past their warm-up and not yet done at once as ever were (`occupancy`: all
// of them for timeslice and mps, K for slots, one for sequential), and some
// trained. Ramps, where the first processes train before the last have
// started or after the first have ended, are left out, as the steady-state
// benchmarks (bench/fusion) leave them out; wall figures keep them. A
// process evaluating between epochs stays in: its evaluation shares the GPU
// with the others' training, as it would in the user's run. When that time
// is shorter than kMinFullOccupancySeconds or kMinFullOccupancyShare of the
// union of every process's training spans, the union is the window
// (full_occupancy false). Samples are those trained inside the window.
// Pass only the processes that started: nullopt when one of them has fewer
// than two writes past its warm-up (it does not report progress, or ended
// too soon to be timed), or none is passed.
std::optional<TrainingWindow> training_window(const std::vector<std::vector<TimedProgress>>& processes,
                                              double warmup_fraction = 0.1);

// Joules the devices' energy counters advanced inside `intervals`, the
// cumulative counter interpolated linearly between readings; nullopt when a
// device has no counter readings spanning an interval.
std::optional<double> energy_within(const std::vector<std::vector<gpu::DeviceSample>>& devices,
                                    const std::vector<std::pair<double, double>>& intervals);

}  // namespace colo::compare
