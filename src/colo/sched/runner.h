#pragma once
// Runs the jobs of a store on this machine's GPUs: places them with a
// policy, launches them, watches them, recovers OOM deaths.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "colo/core/stopwatch.h"
#include "colo/core/subprocess.h"
#include "colo/gpu/device.h"
#include "colo/gpu/mps.h"
#include "colo/sched/backfill.h"
#include "colo/sched/policy.h"
#include "colo/sched/recovery.h"
#include "colo/sched/simulator.h"
#include "colo/sched/store.h"

namespace colo::sched {

struct RunnerOptions {
  std::string policy = "magm";
  CollocationMode mode = CollocationMode::kMps;
  Thresholds thresholds;
  RecoveryOptions recovery;
  BackfillRule backfill;
  double poll_interval_s = 0.5;
  std::string log_dir;            // per-job logs and exit-status files
  std::string mps_dir;            // private MPS pipe/log dirs (mode mps)
  std::string mps_control = "nvidia-cuda-mps-control";
  // mode mps: each job may pin at most its estimate plus the margin
  // (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT; see mps_limit.h).
  bool mps_memory_limits = true;
};

// Options from the names a user gives (policy, collocation mode, recovery
// rule), the polling interval and the backfill reservation (seconds, 0 for
// none); throws InputError for an unknown name or a negative time before
// anything runs.
RunnerOptions runner_options_from_names(const std::string& policy, const std::string& mode,
                                        const std::string& recovery, double poll_interval_s,
                                        double reserve_after_s = 0);

// One scheduler over one store and the devices it was given. Jobs run as
// `/bin/sh` wrappers in their own process groups, with stdout and stderr in
// `<log_dir>/job-<id>.log` and their exit status written to
// `<log_dir>/job-<id>.status`, so a restarted runner can still learn how a
// job it did not start ended. Not thread-safe.
class Runner {
 public:
  // With no devices, jobs run one at a time without a GPU. Throws
  // InputError when the log directory cannot be created.
  Runner(JobStore& store, std::vector<gpu::DevicePtr> devices, RunnerOptions options);
  ~Runner();

  // After a restart: jobs the store says are RUNNING are adopted when their
  // process group still lives, else settled from their status file, else
  // REQUEUED. Call once before step().
  void recover();

  // One round: settle finished jobs (OOM deaths to the recovery queue, or
  // FAILED past the retry limit), then place and start waiting jobs.
  // Returns how many jobs are not yet in a final state.
  size_t step();

  // Steps until every job is final; `on_round` (if set) is called after each.
  void run_until_done(const std::function<void()>& on_round = {});

  // Stops every job this runner watches (SIGTERM, then SIGKILL) and requeues them.
  void stop_all(const std::string& reason);

  // The latest reading of each device (by position), taken at the start of
  // the last step(). Simulated GPUs carry the memory estimate and SM share
  // of the jobs running on them, on the wall clock.
  const std::map<int, gpu::DeviceSample>& last_samples() const { return last_sample_; }

 private:
  struct Active {
    int64_t id = 0;
    int gpu = 0;
    int pgid = 0;
    std::unique_ptr<ChildProcess> child;  // null for an adopted job
    JobRequest request;
    int64_t peak_bytes = 0;
    double energy_j = 0;
  };

  void settle(Active& job, int exit_code);
  bool start(const JobRecord& job);
  std::vector<GpuView> views() const;
  JobRequest request_for(const JobRecord& job) const;
  void observe_devices();
  // A simulated GPU accounts the jobs placed on it (their estimate and SM
  // share); both are no-ops on a real GPU.
  void account_on_simulated(const Active& job);
  void release_on_simulated(const Active& job);
  gpu::MpsDaemon* mps_for(int gpu);
  std::string log_path(int64_t id) const;
  std::string status_path(int64_t id) const;

  JobStore& store_;
  std::vector<gpu::DevicePtr> devices_;
  bool has_gpus_;
  RunnerOptions options_;
  std::unique_ptr<Policy> policy_;
  std::vector<Active> active_;
  std::map<int, std::unique_ptr<gpu::MpsDaemon>> mps_;
  std::map<int, gpu::DeviceSample> last_sample_;
  Stopwatch clock_;
  double last_observed_s_ = -1;  // clock_ at the last observe_devices()
};

}  // namespace colo::sched
