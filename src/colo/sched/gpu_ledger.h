#pragma once
// What each GPU holds as the scheduler accounts it. These are the rules the
// runner and the simulator share, so that a simulation runs exactly the
// runner's rules: the runner feeds the ledger real device readings, the
// simulator its simulated ones, and both place jobs from its views().
//
// Memory: each job reserves the larger of its estimate plus the margin and
// its measured peak; a reading of the device's free memory caps what is left.
// SM activity: the larger of the measured activity (mean over the last
// `settle_active_s` seconds) and the sum of the shares known for its jobs
// (under MPS with Thresholds::count_shares_once_training, for its jobs that
// train: share_counts).
// A job of unknown share settles; up to `max_settling_per_gpu` settle on a
// GPU at once. A job that reports training progress settles over the
// `settle_active_s` after its first report (started_training); one that
// does not, once its memory has stopped growing for three times that, at
// most `settle_s` after it starts. Its share is the rise of its first GPU's
// activity over its baseline (the mean just before it began training, or
// at launch), less the known shares of jobs that began after that
// baseline; a rise shared with other settling jobs that began meanwhile is
// split evenly between them. Where its neighbours report their training
// rates (observe_rate, and their work done, observe_work, read at its
// baseline and at its settling), the rise understates what it uses alone
// on a busy GPU: it also took the SM time they lost. Then its share is the
// activity it took (rise plus their demand times their mean slowdown d),
// over 1 - d, its own rate had it slowed as they did: what it would use
// alone. Their demand is the GPU's activity where it had room; on a busy
// GPU, that activity over their mean speed as a fraction of alone (their
// rates over their solo_rate, where earlier settlements showed it), else
// their known shares added up. A share the readings could not show (MeasuredShare::seen) is
// marked so, and is not to be learned.
// When that rise is below `min_sm_gain` on a GPU at
// least `saturation_floor` busy that had other jobs, the GPU's aggregate has
// stopped growing and it takes no job until one leaves it. A job that ends
// while settling, after some active time, is measured as it ends.
// With Thresholds::probe_alone, a settling job that has neighbours when its
// window ends is measured alone instead: the jobs on its GPUs are paused
// (take_probe_steps) for probe_drain_s + settle_active_s, and its share is
// its GPU's activity (its busiest GPU's) over the last settle_active_s.
// One probe at a time touches a GPU; a job due meanwhile waits for it. The
// readings a GPU gives while its jobs are paused are read for that
// measurement only: its load, for placing jobs and for newcomers'
// baselines, is what it read before. A job that reports no training and
// shows almost nothing alone is measured again later (MeasuredShare::again):
// its memory went quiet while it started up. One measured before its first
// progress report is measured once more from that report
// (MeasuredShare::once_training); one whose first report came while it
// was measured is measured again from that report (MeasuredShare::again).
// A job of known share that joins a GPU past the ceiling is judged the
// same way (LedgerEntry::judged): packing goes on while each newcomer,
// known or not, still raises the GPU's activity.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "colo/sched/collocation_mode.h"
#include "colo/sched/executor.h"
#include "colo/sched/policy.h"

namespace colo::sched {

// One running job as the ledger accounts it.
struct LedgerEntry {
  JobRequest request;
  std::vector<int> gpus;
  double start_s = 0;
  double sm_share = 0;         // declared, from history, or measured; 0 while unknown
  bool settling = false;       // share unknown: measured when its settle window ends
  double activity_before = 0;  // mean activity of its first GPU when it started
  int64_t peak_bytes = 0;      // largest measured use on one of its GPUs
  double active_since_s = -1;  // when its memory first showed on a GPU; -1 = not yet
  double last_growth_s = -1;   // when its measured memory last grew
  double training_since_s = -1;  // its first progress report; -1 = none yet
  std::optional<double> rate;    // its training rate at the last reading (any unit)
  // Its training rate alone (units of `rate`), as the readings last showed
  // it: its rate on a GPU with room, or its rate over its speed beside
  // others (MeasuredShare::speed). nullopt until one settlement tells.
  std::optional<double> solo_rate;
  std::optional<WorkDone> work;  // its work done at the last reading
  // While it settles: each neighbour's rate when its baseline was taken,
  // and its work done then (its rate since is read from the two works).
  std::map<int64_t, double> neighbour_rates_before;
  std::map<int64_t, WorkDone> neighbour_work_before;
  // While it settles: its neighbours' known shares added up at its baseline,
  // what they would use alone (above 1 on an oversubscribed GPU).
  double neighbour_demand_before = 0;
  // While it settles: its neighbours' mean speed as a fraction of alone at
  // its baseline, over those whose solo_rate is known; nullopt if none.
  std::optional<double> neighbour_speed_before;
  int neighbours_before = 0;  // jobs beside it at its baseline
  // Its share was measured before it reported training: with probes, it
  // is measured once more from its first progress report (started_training).
  bool measured_before_training = false;
  bool remeasuring = false;  // settling that second time
  // Measured at almost nothing alone before it trained (MeasuredShare::
  // again): measured again once its memory grows and is quiet again, or
  // from its first progress report, else at settle_s after its start.
  bool awaits_change = false;
  // Of known share, placed under MPS on a GPU already past the SM ceiling
  // (GpuView::grows_past_ceiling): when it would settle, its GPU's rise
  // is read as a settling job's is, and closes the GPU if under
  // min_sm_gain. Its share stays as known; meanwhile it counts as settling.
  bool judged = false;
};

// The peak a provisional job (JobRequest::provisional) reached once its
// memory stopped growing: what it reserves from then on, and what a later
// job of the same command may be given.
struct MeasuredPeak {
  int64_t id = 0;
  int64_t peak_bytes = 0;
};

// A share measured when a job's settle window ended.
struct MeasuredShare {
  int64_t id = 0;
  double share = 0;
  bool saturated = false;      // the GPU's activity stopped growing with it
  double rise = 0;             // what its GPU's activity rose by with it
  std::optional<double> neighbour_slowdown;  // its neighbours' mean rate lost (0..1), when they report rates
  // What its neighbours would use alone, by which their loss was weighed,
  // and whether it was read from their speeds (else from their shares or
  // the GPU's activity).
  std::optional<double> neighbour_demand;
  bool demand_from_speeds = false;
  // Each neighbour's rate lost (0..1), by job id, that neighbour_slowdown averages.
  std::vector<std::pair<int64_t, double>> neighbour_losses;
  // False when the readings did not show the job's own share: it joined a
  // GPU already full (activity at least 0.85), the activity did not rise,
  // and no neighbour that reports its rate lost 3% of it (`share` is then
  // a floor); or the scheduler found it settled beside jobs of other
  // commands (`share` is their mean). Then `share` is not to be learned for
  // its command or reported as its figure; `unseen_because` says why.
  bool seen = true;
  std::string unseen_because;
  // The settling jobs whose rise it shared (split evenly between them).
  std::vector<int64_t> settled_with;
  // Its speed as a fraction of alone once it joined, taken to be its
  // neighbours' (all of a busy GPU's jobs slow alike): 1 on a GPU with room;
  // nullopt where the readings do not tell.
  std::optional<double> speed;
  // Measured alone, its neighbours paused (Thresholds::probe_alone); then
  // `beside` is what the rise rule read just before, where it was seen.
  bool alone = false;
  std::optional<double> beside;
  // Not taken: measured alone at under Thresholds::min_started_share while
  // it reported no training, it is most likely still starting up (reading
  // data, building its model on the CPU). It keeps settling: measured
  // again once its memory grows and is quiet for settle_quiet_s, or from
  // its first progress report; at settle_s after its start it is taken as
  // is (a light job is probed twice, not every settle_quiet_s).
  bool again = false;
  // Its second measurement, from its first progress report: the first came
  // before it reported training (LedgerEntry::measured_before_training).
  bool once_training = false;
};

// A job of known share that joined past the SM ceiling (LedgerEntry::
// judged), as its judgement found it.
struct JudgedJoin {
  int64_t id = 0;
  double share = 0;     // its known share, unchanged
  double rise = 0;      // what its GPU's activity rose by with it
  bool closed = false;  // the rise was under min_sm_gain: its GPU closed
};

// Jobs to let run on and jobs to pause now, for the probes that measure a
// settling job alone. The caller carries them out, resumes first: a probe
// that ends and one that begins in the same call may name the same job.
struct ProbeSteps {
  std::vector<int64_t> resume;
  std::vector<int64_t> pause;
};

// What a job's energy on a GPU is split by among the jobs there: its SM
// share when known (> 0), else 0.5.
double energy_share_for(double sm_share);

class GpuLedger {
 public:
  // One GPU per entry of `mem_total_bytes`, indexed from 0.
  GpuLedger(std::vector<int64_t> mem_total_bytes, CollocationMode mode, Thresholds thresholds);

  // Records `request` running on `gpus` from `now_s`. A request with
  // sm_share 0 settles.
  void place(const JobRequest& request, const std::vector<int>& gpus, double now_s);
  // Forgets a job that ended or was stopped at `now_s`; reopens the GPUs it
  // was on. A job still settling that was active long enough comes back
  // measured.
  std::optional<MeasuredShare> remove(int64_t id, double now_s);
  // The job's measured use on one GPU at `now_s`; the largest is kept, and
  // the first use above zero starts its active time.
  void observe_peak(int64_t id, int64_t bytes, double now_s);
  // The job's training rate now (samples/s or any unit: only its changes
  // are read); a neighbour's rates measure what a settling job took.
  void observe_rate(int64_t id, double rate);
  // The job's work done at its last reading. A settling job's neighbours'
  // rates while it trains are read from their work at its baseline and at
  // its settling, so that they cover exactly that stretch; a neighbour with
  // no work (or under a second of it between the two) is read by its rate.
  void observe_work(int64_t id, const WorkDone& work);
  // The job reported training progress for the first time at `now_s`: its
  // share is measured from here (see above). Later calls change nothing.
  void started_training(int64_t id, double now_s);
  // Provisional jobs whose memory has stopped growing by `now_s` (for
  // settle_active_s after their first progress report, else for three
  // times that) reserve their measured peak plus 10% from now on, and
  // come back with it.
  std::vector<MeasuredPeak> measure_provisional(double now_s);
  // When measure_provisional next has a peak to give; +infinity when no
  // provisional job has started.
  double next_provisional_s() const;
  // The estimate of a provisional job's memory came after it started: it
  // reserves that (or its peak so far, if larger) from now on, as a job of
  // known memory. False, and no change, for any other job.
  bool estimate_arrived(int64_t id, int64_t mem_bytes);
  // A reading of GPU `gpu` at `now_s`; nullopt where the device cannot tell.
  void observe(int gpu, double now_s, std::optional<double> sm_activity, std::optional<int64_t> mem_free_bytes);
  // Closes GPU `gpu` to further jobs, for `why`, until one of its jobs
  // leaves; no effect on a GPU already closed.
  void close(int gpu, const std::string& why);
  // Ends the settle windows due by `now_s`; returns the shares measured.
  std::vector<MeasuredShare> settle(double now_s);
  // When the next settle window ends; +infinity when none is open.
  double next_settle_s() const;
  // The pauses and resumes the probes asked for since the last call.
  ProbeSteps take_probe_steps();
  // The judged jobs settle() judged since the last call.
  std::vector<JudgedJoin> take_judged();
  // True while a probe pauses jobs on GPU `gpu`, and for the rate window
  // after (settle_active_s, throughput_window_s): its jobs' rates then show
  // the pause, not what their neighbours take.
  bool probing(int gpu, double now_s) const;
  // True while view(gpu, t) is the same for every later t until the GPU's
  // jobs, their shares or its readings change: no job on it settles and its
  // activity readings are all one value. A caller may then keep a view.
  bool steady(int gpu) const;

  // The GPUs as policies see them at `now_s`.
  std::vector<GpuView> views(double now_s) const;
  // One of them.
  GpuView view(int gpu, double now_s) const;
  const std::map<int64_t, LedgerEntry>& jobs() const { return jobs_; }
  // Jobs on GPU `gpu`, by id.
  std::vector<int64_t> jobs_on(int gpu) const;
  // The share a job's energy is split by: energy_share_for its SM share.
  double energy_share(int64_t id) const;

 private:
  static constexpr double kMinMeasuredShare = 0.02;  // no share is measured below this
  struct GpuState {
    int64_t mem_total_bytes = 0;
    std::deque<std::pair<double, double>> activity;  // (time, SM activity) readings
    std::optional<int64_t> measured_free_bytes;
    std::string saturated;                            // why it stopped growing; "" = open
    int settling_jobs = 0;                            // jobs on it whose share is being measured
    double last_rise = 1;                             // what its last measured job added to its activity
    double probe_ends_s = -1;      // when the probe that touches it ends (in the past: none does)
    double probe_quiet_s = -1;     // until when its jobs' rates still show a probe's pause
    // Recent probes' pauses on it: readings then show the probed job alone,
    // not the GPU's load, and are read only to measure that job.
    struct Pause {
      double from_s, until_s;  // readings after from_s up to until_s
      double activity_before;  // the GPU's mean activity when it began
    };
    std::deque<Pause> pauses;
  };
  // A settling job measured alone while `paused` wait.
  struct Probe {
    int64_t id = 0;
    double since_s = 0;
    std::vector<int64_t> paused;
    std::vector<int> gpus;  // every GPU it touches: the job's and its paused neighbours'
    MeasuredShare beside;   // the rise rule's reading when it began
  };
  enum class ProbeStart { kNotProbed, kWaits, kStarted };
  // Pauses the jobs beside settling `job` and starts measuring it alone.
  // kNotProbed: it has no neighbours, or its GPU gives no activity
  // readings (a pause would show nothing); kWaits: a probe already touches
  // their GPUs.
  ProbeStart start_probe(int64_t id, LedgerEntry& job, double now_s);
  // Ends probes due by `now_s`, their jobs measured alone, into `measured`.
  void end_probes(double now_s, std::vector<MeasuredShare>& measured);
  // Lets a probe's paused jobs run on; its GPUs are free of it from `now_s`.
  void release_probe(const Probe& probe, double now_s);
  double probe_ends_s(const Probe& probe) const;
  // Until when a probe touching the GPUs of `job` or of its neighbours keeps
  // it from starting its own (in the past when none does).
  double probe_blocks_until(int64_t id, const LedgerEntry& job) const;
  // The jobs on `job`'s GPUs other than itself, each once.
  std::vector<int64_t> neighbours_of(int64_t id, const LedgerEntry& job) const;
  // A measured share taken as the job's: it stops settling and counts it
  // (and `m` says whether this was its second measurement).
  void conclude(int64_t id, LedgerEntry& job, MeasuredShare& m);
  // Readings of `gpu` later than `since_s` still kept.
  int readings_since(const GpuState& gpu, double since_s) const;
  // Mean reading over the averaging window, counting none before `since_s`
  // and, unless `during_pauses`, none taken while a probe paused jobs on it
  // (all of them were: the mean when the latest such pause began).
  double mean_activity(const GpuState& gpu, double now_s, double since_s = -1e300,
                       bool during_pauses = false) const;
  double settles_at(const LedgerEntry& job) const;
  // Reads a judged job's rise when it is due (LedgerEntry::judged).
  void judge(int64_t id, LedgerEntry& job, double now_s);
  // Whether a job's SM share counts on its GPU at `now_s`: a share still
  // measured counts as 0; with Thresholds::count_shares_once_training, a
  // known one from its first progress report (else from when it would
  // settle, settles_at): a job starting up uses no SM time.
  bool share_counts(const LedgerEntry& job, double now_s) const;
  // When a provisional job's peak counts as measured (measure_provisional).
  double provisional_due_s(const LedgerEntry& job) const;
  // When a job's own activity began to count: its first progress report,
  // else its first memory on the GPU, else its launch.
  static double began_s(const LedgerEntry& job);
  // The settling job's share now: the rise of its first GPU's activity less
  // the known shares of jobs that joined it since, with the SM time its
  // neighbours lost where they report rates.
  MeasuredShare measure(int64_t id, const LedgerEntry& job, double now_s);
  // The rates of the jobs beside `job` on its first GPU now: its baseline's.
  void take_neighbour_rates(int64_t id, LedgerEntry& job) const;
  // What the jobs beside a settling `job` would use alone at its baseline,
  // and whether that was read from their speeds.
  struct Demand {
    double value = 0;
    bool from_speeds = false;
  };
  static Demand neighbour_demand(const LedgerEntry& job);
  // A job measured to run at `speed` of alone beside its neighbours: its
  // solo_rate, theirs where they ran at full speed at its baseline, and
  // theirs where none was known and they slowed to that speed.
  void learn_solo_rates(int64_t id, LedgerEntry& job, double speed);
  // A neighbour's rate since `job`'s baseline: from its work then and now,
  // else its last rate; nullopt when it reports neither.
  static std::optional<double> rate_since(const LedgerEntry& neighbour, const LedgerEntry& job, int64_t neighbour_id);

  std::vector<GpuState> gpus_;
  CollocationMode mode_;
  Thresholds thresholds_;
  std::map<int64_t, LedgerEntry> jobs_;
  int provisional_ = 0;  // provisional jobs not yet measured
  int settling_ = 0;  // jobs whose share is being measured or which are judged (settle() and next_settle_s()
                      // skip the walk at 0)
  std::vector<Probe> probes_;
  ProbeSteps steps_;  // not yet taken by take_probe_steps()
  std::vector<JudgedJoin> judged_;  // not yet taken by take_judged()
  std::vector<std::vector<int64_t>> on_gpu_;  // job ids by GPU
};

}  // namespace colo::sched
