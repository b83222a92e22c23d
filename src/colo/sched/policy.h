#pragma once
// Placement policies: may this job go on this GPU now (filter), and how good
// a place is it (score)? In the manner of the Kubernetes scheduling framework.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace colo::sched {

// What a policy knows of a GPU at the moment of a decision.
struct GpuView {
  int index = 0;
  int64_t mem_total_bytes = 0;
  // Free memory as the scheduler accounts it: total minus, for each job on
  // the GPU, the larger of its reservation (estimate + margin) and its
  // observed use.
  int64_t mem_free_bytes = 0;
  double sm_activity = 0;        // measured (or simulated), 0..1
  int jobs = 0;                  // jobs placed on it
  bool held_exclusively = false; // a job that must run alone is on it
};

// What a policy knows of the job being placed.
struct JobRequest {
  int64_t id = 0;
  std::optional<int64_t> mem_bytes;  // estimated peak; nullopt = unknown
  double sm_share = 0;               // expected SM activity alone, 0..1 (0 = unknown)
  bool must_run_alone = false;       // OOM recovery under RAD-RM's rule
  int64_t min_free_bytes = 0;        // OOM recovery under the peak + margin rule
};

// Thresholds RAD-RM uses for collocation.
struct Thresholds {
  double max_sm_activity = 0.80;           // a GPU busier than this takes no more jobs
  int64_t mem_margin_bytes = int64_t{1} << 30;  // free memory must exceed the estimate by this
};

// A placement policy. filter() and score() are pure; placed() lets a
// stateful policy (round-robin) remember a decision. Not thread-safe.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // May `job` go on `gpu` now?
  virtual bool filter(const JobRequest& job, const GpuView& gpu) const = 0;
  // Higher is better; only called for GPUs that passed filter().
  virtual double score(const JobRequest& job, const GpuView& gpu) const = 0;
  virtual void placed(const JobRequest& /*job*/, int /*gpu_index*/) {}
};

// Checks every policy shares: a GPU held by a must-run-alone job takes
// nothing; a must-run-alone job needs an empty GPU; the recovery minimum.
bool passes_common_rules(const JobRequest& job, const GpuView& gpu);

// RAD-RM's collocation thresholds: SM activity at most the maximum, and free
// memory at least the estimate plus the margin. A job of unknown memory
// only goes on an empty GPU.
bool passes_collocation_thresholds(const JobRequest& job, const GpuView& gpu, const Thresholds& t);

// The GPU `policy` picks for `job` among `gpus`: highest score among those
// passing filter (ties: lowest index); nullopt when none passes. Calls
// policy.placed() on a pick.
std::optional<int> pick_gpu(Policy& policy, const JobRequest& job, const std::vector<GpuView>& gpus);

// Policies by name: exclusive, round-robin, magm, lug, best-fit.
std::vector<std::string> policy_names();
// A fresh policy; throws std::invalid_argument for an unknown name.
std::unique_ptr<Policy> make_policy(const std::string& name, const Thresholds& thresholds = {});

}  // namespace colo::sched
