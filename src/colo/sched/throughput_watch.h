#pragma once
// Whether adding a job to a GPU still raised what the GPU trains in all.
// Each job's throughput counts as a fraction of its throughput alone (a job
// at half its alone speed counts 0.5), so jobs of different models add up.
// When a job joins a GPU that runs others, the watch keeps their sum; once
// the newcomer's own figure is known, the sum with it must exceed the sum
// before by `min_gain` (a fraction), or the GPU has stopped growing and
// should take no further job (GpuLedger::close) until one leaves. The GPU
// stays open while a join waits for its figures: holding it would start
// jobs one at a time.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace colo::sched {

// One job on a GPU: its recent throughput over its throughput alone;
// nullopt when it reports none or its alone figure is unknown.
struct JobThroughput {
  int64_t id = 0;
  std::optional<double> normalized;
};

// How a watched join ended.
struct JoinOutcome {
  int64_t id = 0;                             // the job that joined
  std::optional<std::string> stopped_growing; // why the GPU should close; nullopt: it grew, or no verdict
};

class ThroughputWatch {
 public:
  // `min_gain`: the fraction the sum must grow by; `timeout_s`: how long a
  // join may wait for its figures before it is dropped without a verdict.
  ThroughputWatch(double min_gain, double timeout_s) : min_gain_(min_gain), timeout_s_(timeout_s) {}

  // Job `id` joined GPU `gpu` at `now_s`, where `others` ran. Returns
  // whether it is watched: not when the GPU was empty or any of them has no
  // figure (nothing to compare against).
  bool joined(int gpu, int64_t id, const std::vector<JobThroughput>& others, double now_s);
  // Checks the joins on `gpu` against its jobs at `now_s`; returns those
  // that ended: decided (every figure known), or dropped (the newcomer or
  // another job left, or `timeout_s` passed).
  std::vector<JoinOutcome> check(int gpu, const std::vector<JobThroughput>& jobs_now, double now_s);
  // Joins still waiting for figures.
  size_t watching() const { return joins_.size(); }
  // The GPUs those joins are on, each once.
  std::vector<int> watched_gpus() const;

 private:
  struct Join {
    int gpu;
    int64_t id;
    std::vector<int64_t> others;
    double before;
    double since_s;
  };
  double min_gain_;
  double timeout_s_;
  std::vector<Join> joins_;
};

}  // namespace colo::sched
