#pragma once
// The scheduler's core, one for both of colo's executors (executor.h): the
// runner's real processes (`colo run`, colod) and the simulator's virtual
// clock (`colo simulate`, `colo replay`). It owns what decides: the GPU
// ledger (gpu_ledger.h), one JobHistory (shares, peaks, alone rates), the
// request each waiting job makes (job_request.h), the policy, the
// throughput rule (throughput_watch.h) and the round that tries waiting
// jobs in rank order with backfill (queue_order.h, backfill.h). An executor
// launches, stops and observes; so a simulation runs exactly the runner's
// rules. Not thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "colo/sched/backfill.h"
#include "colo/sched/collocation_mode.h"
#include "colo/sched/executor.h"
#include "colo/sched/gpu_ledger.h"
#include "colo/sched/job_history.h"
#include "colo/sched/job_request.h"
#include "colo/sched/policy.h"
#include "colo/sched/queue_order.h"
#include "colo/sched/recovery.h"
#include "colo/sched/throughput_watch.h"

namespace colo::sched {

struct SchedulerOptions {
  std::string policy = "magm";
  CollocationMode mode = CollocationMode::kMps;
  Thresholds thresholds;
  RecoveryOptions recovery;
  BackfillRule backfill;
  // History finds a share for a new command by its model too (JobHistory).
  bool predict_shares = true;
  // A job of unknown memory may start beside others with a provisional
  // reservation (JobRequest::provisional): the executor can see each job's
  // memory. Never under kExclusive.
  bool provisional_memory = true;
  // The throughput rule: a job joining others whose figures are known is
  // watched, and its GPU closes when their sum did not grow (policies that
  // ignore colo's thresholds ignore it too).
  bool throughput_rule = true;
  // Waiting jobs' reasons in words (the runner writes them to the store);
  // false leaves them empty (a simulation of many jobs need not build them).
  bool explain = true;
  // Waiting jobs tried per round; 0: all.
  int window = 0;
  // GPUs per node (0: all on one): a job of several GPUs is gang-placed on
  // GPUs of one node.
  int gpus_per_node = 0;
};

// One waiting job, as a round tries it.
struct WaitingJob {
  RequestFacts facts;
  QueueKey rank;
  double waited_s = 0;  // since it was submitted
  // Set while its memory estimate is still being made: it starts only on an
  // empty GPU meanwhile (and this is why it waits otherwise).
  std::string estimate_pending;
  // Its training throughput alone is known, so a join of it can be judged
  // by the throughput rule.
  bool throughput_comparable = false;
};

// What a round did.
struct RoundOutcome {
  std::vector<int64_t> started;
  std::map<int64_t, std::string> waiting;  // jobs tried and not started: why (empty without `explain`)
  // A job that has waited long enough and does not fit holds back every
  // job ranked after it (backfill.h): those were not tried.
  std::optional<int64_t> reserved_for;
};

// What the readings of one observe() taught.
struct Measured {
  std::vector<MeasuredShare> shares;  // settle windows that ended (learned into history)
  std::vector<MeasuredPeak> peaks;    // provisional jobs measured (learned into history)
  std::vector<std::pair<int, std::string>> closed;  // GPUs the throughput rule closed, and why
  std::vector<JudgedJoin> judged;  // jobs of known share that joined past the SM ceiling, judged
};

class Scheduler {
 public:
  // One GPU per entry of `mem_total_bytes`. Throws std::invalid_argument for
  // an unknown policy.
  Scheduler(std::vector<int64_t> mem_total_bytes, SchedulerOptions options);

  // The request a waiting job makes now (build_request, with this core's
  // history and provisional rule).
  JobRequest request_for(const RequestFacts& facts) const;

  // Reads the executor's readings at `now_s` into the ledger, ends the
  // settle windows due, measures provisional jobs whose memory stopped
  // growing and applies the throughput rule; what was measured is learned
  // by command and model (JobHistory) and returned.
  Measured observe(Executor& executor, double now_s);

  // Tries `queue`, already in rank order, on the GPUs as the ledger sees
  // them: each job whose request the policy places is launched there (a
  // job of unknown memory with what is free less the margin), until a job
  // that holds back the rest. A job asking at least as much as one refused
  // this round is refused without another scan.
  RoundOutcome round(const std::vector<WaitingJob>& queue, Executor& executor, double now_s);

  // A job the executor already runs (adopted after a restart) counts from now.
  void adopt(const JobRequest& request, const JobKeys& keys, const std::vector<int>& gpus, double now_s,
             int64_t used_bytes = 0);
  // Stops a running job through the executor and forgets it (ended()).
  std::optional<MeasuredShare> stop(Executor& executor, int64_t id, double now_s);
  // A job ended or was stopped at `now_s`: its GPUs reopen. A share
  // measured as it leaves is learned and returned.
  std::optional<MeasuredShare> ended(int64_t id, double now_s);
  // The memory estimate of a job that started provisionally came: it
  // reserves that from now on; the request it now holds, or nullopt when it
  // was not provisional.
  std::optional<JobRequest> estimate_arrived(int64_t id, int64_t mem_bytes);

  // When the next decision falls due without a new reading: a settle
  // window ends, a provisional peak counts, a watched join is judged;
  // +infinity when none.
  double next_due_s() const;

  JobHistory& history() { return history_; }
  const JobHistory& history() const { return history_; }
  const GpuLedger& ledger() const { return ledger_; }
  const Policy& policy() const { return *policy_; }
  int gpus() const { return static_cast<int>(views_.size()); }

 private:
  // Marks a share measured together with jobs of other commands (their
  // mean, MeasuredShare::settled_with) as not the job's own.
  void judge(MeasuredShare& m) const;
  void learn(const MeasuredShare& m);
  void mark_stale(const std::vector<int>& gpus);
  // Views of every GPU for this round: one kept while its GPU is steady.
  void refresh_views(double now_s);
  std::vector<JobThroughput> throughput_on(const Executor& executor, int gpu) const;
  bool rule_applies() const;
  // The policy's placement on the views, a multi-GPU job on one node.
  Placement pick(const JobRequest& request);

  SchedulerOptions options_;
  std::unique_ptr<Policy> policy_;
  GpuLedger ledger_;
  JobHistory history_;
  ThroughputWatch watch_;
  std::map<int64_t, JobKeys> keys_;  // running jobs' keys, for learning
  std::vector<GpuView> views_;       // as of the last round, kept current through its placements
  std::vector<char> view_stale_;     // views_[g] must be recomputed (changed, or not steady when computed)
  std::vector<GpuReading> last_readings_;  // each GPU's, as last observed
  std::vector<double> verdicts_due_;       // when watched joins are judged, sorted
};

}  // namespace colo::sched
