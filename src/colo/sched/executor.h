#pragma once
// What the scheduler core (scheduler.h) drives: something that runs jobs on
// GPUs and reports what it sees. Two implement it: the runner (real
// processes, NVML readings, on the wall clock) and the simulator (modelled
// jobs on a virtual clock). The core decides; an executor only carries out
// and observes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "colo/sched/policy.h"

namespace colo::sched {

// One GPU as the executor read it; nullopt where it cannot tell.
struct GpuReading {
  int gpu = 0;
  std::optional<double> sm_activity;      // 0..1
  std::optional<int64_t> mem_free_bytes;  // what the device says is free
};

// A job's training work at one reading: `units` done since it started (in
// its rate's unit) after `clock_s` seconds of its own training. Two
// readings give its mean rate between them, over exactly that stretch.
struct WorkDone {
  double units = 0;
  double clock_s = 0;
};

// One running job as the executor saw it.
struct JobReading {
  int64_t id = 0;
  std::optional<int64_t> used_bytes;  // its memory on its GPUs now
  bool training = false;              // it has reported training progress
  std::optional<double> rate;         // its training rate now (any unit: only its changes are read)
  std::optional<WorkDone> work;       // its work done so far, in the unit of `rate`
};

struct Observation {
  std::vector<GpuReading> gpus;
  std::vector<JobReading> jobs;
};

// How a launch went.
struct Launch {
  enum class Outcome {
    kStarted,
    kWaits,  // it could not start yet for a reason of its own (its shared loader not ready)
    kGone,   // it left the queue meanwhile (cancelled): nothing to start
  };
  Outcome outcome = Outcome::kStarted;
  std::string reason;       // kWaits: why
  int64_t used_bytes = 0;   // kStarted: memory it shows at once (> 0 makes it active from now)
  bool training = false;    // kStarted: it trains from its first moment (a modelled job)

  static Launch started(int64_t used_bytes = 0, bool training = false) {
    return {Outcome::kStarted, "", used_bytes, training};
  }
  static Launch waits(std::string why) { return {Outcome::kWaits, std::move(why), 0, false}; }
  static Launch gone() { return {Outcome::kGone, "", 0, false}; }
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Starts job `id` on `gpus` with what it reserves (`request`, its
  // provisional reservation filled in). The core counts it as running only
  // when the launch says kStarted.
  virtual Launch launch(int64_t id, const std::vector<int>& gpus, const JobRequest& request) = 0;
  // Stops a running job; it is no longer observed.
  virtual void stop(int64_t id) = 0;
  // Pauses running jobs `ids`, every process of each, until resume(): a
  // paused job keeps its memory, uses no SM time and makes no progress.
  // The ledger pauses a settling job's neighbours for a few seconds to
  // measure its share alone (Thresholds::probe_alone).
  virtual void pause(const std::vector<int64_t>& ids) = 0;
  // Lets paused jobs `ids` run on; ids that are not paused are ignored.
  virtual void resume(const std::vector<int64_t>& ids) = 0;
  // The GPUs' and running jobs' readings at `now_s`.
  virtual Observation observe(double now_s) = 0;
  // A running job's training throughput now as a fraction of its throughput
  // alone; nullopt until both are known (throughput_watch.h).
  virtual std::optional<double> normalized_throughput(int64_t id) const = 0;
};

}  // namespace colo::sched
