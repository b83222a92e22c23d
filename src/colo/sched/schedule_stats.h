#pragma once
// What a finished schedule did, from its per-job records (a `colo run`,
// `colo replay` or `colo simulate` run): waits, completion times, how many
// jobs shared a GPU, and how much slower each job ran than alone.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace colo::sched {

// One job of a schedule, times in seconds on the run's own clock.
struct ScheduledJob {
  std::string name;
  std::string state;   // "COMPLETED", ...
  int gpu = -1;        // the (first) GPU of its last attempt
  double submit_s = 0;
  double start_s = -1; // of its last attempt
  double end_s = -1;
};

struct ScheduleStats {
  int completed = 0;
  double mean_jct_s = 0;       // submit to end, completed jobs
  double mean_wait_s = 0;      // submit to (last) start
  double p95_wait_s = 0;
  int max_jobs_per_gpu = 0;    // most jobs running on one GPU at one moment
  double mean_jobs_per_gpu = 0;  // over the time each GPU had a job
  // Each completed job's run time over its run time in `alone` (a run where
  // it ran alone, matched by name); empty without one.
  std::map<std::string, double> slowdown;
  std::optional<double> mean_slowdown, max_slowdown;
};

// Reads jobs_<policy>_<mode>.jsonl records (the fields above).
ScheduledJob scheduled_job_from_json(const nlohmann::json& j);

// The statistics of `jobs`; slowdowns against `alone` when given.
ScheduleStats schedule_stats(const std::vector<ScheduledJob>& jobs, const std::vector<ScheduledJob>* alone = nullptr);

// Jobs running on `gpu` over time: (time, count from then on), one step per change.
std::vector<std::pair<double, int>> jobs_on_gpu_over_time(const std::vector<ScheduledJob>& jobs, int gpu);

}  // namespace colo::sched
