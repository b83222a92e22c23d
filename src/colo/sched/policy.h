#pragma once
// Placement policies: may this job go on this GPU now (filter), and how good
// a place is it (score)? In the manner of the Kubernetes scheduling framework.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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
  // Non-empty while the GPU takes no further job whatever its load: the last
  // job added did not raise its SM activity (gpu_ledger.h). Says why.
  std::string closed_reason;
  // Non-empty while Thresholds::max_settling_per_gpu jobs of unknown SM
  // share settle on it: it takes no other job of unknown share until one of
  // those shares is measured. Says why.
  std::string settling_reason;
  // Under MPS: its activity is over the ceiling, but no job settles on it
  // and it is not closed, so the last job it took still raised its activity
  // by at least min_sm_gain (never on a GPU that gave no activity reading).
  // It takes one more job: one of unknown share
  // settles, one of known share is judged by the rise it brings
  // (gpu_ledger.h): packing goes on while each job adds work, and stops
  // (closed) at the first that adds less.
  bool grows_past_ceiling = false;
  // Non-empty while a provisional job on it has not had its peak measured:
  // what it reserves is a guess, so no other provisional job joins it.
  std::string provisional_reason;
};

// What a policy knows of the job being placed.
struct JobRequest {
  int64_t id = 0;
  std::optional<int64_t> mem_bytes;  // estimated peak; nullopt = unknown
  double sm_share = 0;               // expected SM activity alone, 0..1 (0 = unknown)
  bool must_run_alone = false;       // OOM recovery under RAD-RM's rule
  int64_t min_free_bytes = 0;        // OOM recovery under the peak + margin rule
  int gpus = 1;                      // placed on this many GPUs at once, all or none
  // Its memory is unknown (no estimate, model or history) and it may share
  // a GPU anyway: it reserves what is free there, less the margin, until
  // its peak is measured (GpuLedger::measure_provisional); OOM recovery is
  // the safety net, as in RAD-RM. Unset, a job of unknown memory only goes
  // on an empty GPU.
  bool provisional = false;
};

// Thresholds RAD-RM uses for collocation.
struct Thresholds {
  double max_sm_activity = 0.80;           // a GPU busier than this takes no more jobs
  int64_t mem_margin_bytes = int64_t{1} << 30;  // free memory must exceed the estimate by this
  // On a GPU over max_sm_activity (GpuView::grows_past_ceiling) free memory
  // must exceed the estimate by this much instead, if larger: one more job
  // there adds little work, and should not add the risk of an OOM that a
  // low estimate brings at the usual margin.
  int64_t mem_margin_past_ceiling_bytes = int64_t{2} << 30;
  // A job of unknown SM share keeps other jobs of unknown share off its GPU
  // until its memory on the GPU has stopped growing for settle_active_s (it
  // trains), at most settle_s after it starts; then its share is measured as
  // the rise of the GPU's activity, averaged over the last settle_active_s.
  // A job that reports its training progress (job_progress.h) is measured
  // over the settle_active_s after its first report instead, whenever that
  // comes: start-up (imports, building the model) never counts.
  double settle_s = 60.0;
  double settle_active_s = 3.0;
  // Seconds after a first progress report that are not yet counted (the
  // first steps' compilation and allocation).
  double settle_warmup_s = 1.0;
  // A job that reports no progress settles once its memory has been quiet
  // this long (start-up often pauses shorter than this).
  double settle_quiet_s = 9.0;
  // Jobs of unknown share that may settle on one GPU at once; a share
  // measured while others rose too is split between them.
  int max_settling_per_gpu = 3;
  // A settling job that has neighbours is measured alone: when its settle
  // window ends, the other jobs on its GPUs are paused (Executor::pause) for
  // probe_drain_s + settle_active_s, and its share is its GPU's activity
  // over the last settle_active_s of that. False: its share is read from
  // the rise of its GPU's activity and its neighbours' lost rates, which a
  // full GPU hides.
  bool probe_alone = false;
  // Under MPS, a job of known share (declared, learned, predicted) counts
  // on its GPU's SM sum only once it trains: from its first progress report, or
  // when it would settle (its memory quiet for settle_quiet_s, at most
  // settle_s after it starts). Its start-up uses no SM time, so others
  // train meanwhile, as beside a settling job. At most
  // max_settling_per_gpu such jobs start on a GPU at once, settling jobs
  // included.
  bool count_shares_once_training = false;
  double probe_drain_s = 1.0;  // for kernels in flight to finish, and the newcomer to speed up
  // A job that reports no progress and shows less than this alone is taken
  // to be still starting up, and is measured again (MeasuredShare::again).
  double min_started_share = 0.2;
  // A job of unknown memory (JobRequest::provisional) joins a busy GPU only
  // where at least this much is free as the scheduler accounts it.
  int64_t min_provisional_bytes = int64_t{4} << 30;
  // A GPU at least `saturation_floor` busy whose SM activity rose by less
  // than min_sm_gain when its last job settled has stopped growing: it takes
  // no further job until one leaves.
  double saturation_floor = 0.5;
  double min_sm_gain = 0.03;
  // Jobs that report their training throughput (job_progress.h): once a job
  // that joined others has trained `throughput_window_s`, a GPU whose summed
  // throughput, each job's as a fraction of its throughput alone, grew by
  // less than this fraction with it takes no further job until one leaves.
  double min_throughput_gain = 0.05;
  double throughput_window_s = 2.0;
};

// Whether a job may go on a GPU, and why not. The reason is formatted only
// when asked for: a simulation refuses millions of times and reads none.
struct Fit {
  enum class Why {
    kFits,
    kGpuSays,          // the GPU's own closed or settling reason (`text`)
    kBusyAlone,        // a job that runs alone holds it
    kMustRunAlone,     // the job recovers alone and the GPU is busy
    kRecoveryMinimum,  // need: bytes free the recovery asks, have: bytes free
    kMemoryUnknown,    // a job of unknown memory waits for an empty GPU
    kProvisional,      // need: free bytes a provisional job joins with, have: bytes free
    kSmActivity,       // have: the GPU's activity, need: the ceiling
    kMemory,           // need: estimate + margin, have: bytes free
    kSmHeadroom,       // have: the GPU's activity, need: the job's share
    kExclusiveBusy,
  };
  Why why = Why::kFits;
  double need = 0, have = 0;
  const std::string* text = nullptr;  // kGpuSays: owned by the GpuView it came from

  static Fit yes() { return {}; }
  static Fit no(Why why, double need = 0, double have = 0) { return {why, need, have, nullptr}; }
  static Fit gpu_says(const std::string& text) { return {Why::kGpuSays, 0, 0, &text}; }
  bool ok() const { return why == Why::kFits; }
  explicit operator bool() const { return ok(); }
  // e.g. "memory: needs 13.0 GiB with margin, 8.0 GiB free"; "" when it fits.
  std::string reason() const;
};

// Where a job goes: the GPUs picked (as many as it asks for), or none and why.
struct Placement {
  std::vector<int> gpus;
  std::string reason;  // set when gpus is empty
  bool placed() const { return !gpus.empty(); }
};

// A placement policy. filter() and score() are pure; placed() lets a
// stateful policy (round-robin) remember a decision. Not thread-safe.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // May `job` go on `gpu` now? When not, the reason names what is short.
  virtual Fit filter(const JobRequest& job, const GpuView& gpu) const = 0;
  // Higher is better; only called for GPUs that passed filter().
  virtual double score(const JobRequest& job, const GpuView& gpu) const = 0;
  virtual void placed(const JobRequest& /*job*/, int /*gpu_index*/) {}
  // True when every GPU this policy lets a job share passes RAD-RM's
  // thresholds (collocation_thresholds), so that might_fit may prune
  // before a scan. A policy that packs by other rules says false.
  virtual bool within_collocation_thresholds() const { return true; }
};

// Checks every policy shares: a GPU held by a must-run-alone job takes
// nothing; a must-run-alone job needs an empty GPU; a saturated GPU takes
// nothing more, a settling one no job of unknown share; the recovery minimum.
Fit common_rules(const JobRequest& job, const GpuView& gpu);

// RAD-RM's collocation thresholds: SM activity at most the maximum, and free
// memory at least the estimate plus the margin. A job of unknown memory
// only goes on an empty GPU, unless it is provisional: then on any GPU with
// at least Thresholds::min_provisional_bytes free.
Fit collocation_thresholds(const JobRequest& job, const GpuView& gpu, const Thresholds& t);

// What a provisional job (JobRequest::provisional) placed on `gpu` reserves
// there: its free memory less the margin (never below zero).
int64_t provisional_reservation(const GpuView& gpu, const Thresholds& t);

// What a set of GPUs has room for, summed up once: how many are empty, and
// the most free memory on one that is open (not held or closed, SM activity
// within the ceiling or still growing past it).
struct GpuRoom {
  int empty = 0;
  int64_t most_free_open_bytes = 0;
};
GpuRoom room_of(const std::vector<GpuView>& gpus, const Thresholds& t);

// False when no policy could place `job` on GPUs with this room: every
// policy's filter implies common_rules and either an empty GPU or
// collocation_thresholds. A cheap test before pick_gpus scans every GPU.
bool might_fit(const JobRequest& job, const GpuRoom& room, const Thresholds& t);

// The GPUs `policy` picks for `job` among `gpus`: the job.gpus highest
// scores among those passing filter (ties: lowest index), all or none. When
// none, the reason says why each GPU refused ("GPU 0: memory: ..."), unless
// `explain` is false. Calls policy.placed() for each GPU picked.
Placement pick_gpus(Policy& policy, const JobRequest& job, const std::vector<GpuView>& gpus, bool explain = true);

// Policies by name: exclusive, round-robin, magm, lug, best-fit, slurm-shard.
std::vector<std::string> policy_names();
// A fresh policy; throws std::invalid_argument for an unknown name.
std::unique_ptr<Policy> make_policy(const std::string& name, const Thresholds& thresholds = {});

}  // namespace colo::sched
