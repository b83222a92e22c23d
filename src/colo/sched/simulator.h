#pragma once
// The scheduler core (scheduler.h) run against simulated GPUs in virtual
// time: the executor of modelled jobs, beside the runner's real processes.

#include <optional>
#include <string>
#include <vector>

#include "colo/gpu/simulated_device.h"
#include "colo/sched/job.h"
#include "colo/sched/backfill.h"
#include "colo/sched/collocation_mode.h"
#include "colo/sched/policy.h"
#include "colo/sched/recovery.h"
#include "colo/sched/trace.h"

namespace colo::sched {

struct SimulationOptions {
  int gpus = 4;
  // GPUs per node (0: all on one node). A multi-GPU job is gang-placed on
  // GPUs of one node, as Slurm and colo's own runner do.
  int gpus_per_node = 0;
  gpu::SimulatedGpuSpec gpu;
  std::string policy = "best-fit";
  CollocationMode mode = CollocationMode::kMps;
  Thresholds thresholds;
  RecoveryOptions recovery;
  BackfillRule backfill;
  double oom_after_s = 5.0;       // a job that does not fit dies this long after it starts
  double shared_overhead = 0.10;  // kShared: fraction of progress lost when jobs share a GPU
  int backfill_window = 256;      // pending jobs considered per scheduling round
  // When false, the scheduler is not told any job's SM share: each job
  // settles and has its share measured (gpu_ledger.h), as real jobs do that
  // declare none; a later job with the same command takes it from history.
  bool declared_sm_share = true;
  // The runner's throughput rule (throughput_watch.h): every job reports
  // its training throughput, and its figure alone is known once a job of
  // the same workload (workload_of) has completed. A join is judged
  // thresholds.throughput_window_s after it starts, on the modelled rates.
  // Policies that ignore colo's thresholds (slurm-shard) ignore it too.
  bool throughput_rule = true;
  // As `colo run` does on real GPUs: a job of unknown memory (no estimate,
  // no history) starts beside others with a provisional reservation, what
  // is free less the margin, until its peak is measured (GpuLedger::
  // measure_provisional, settle_active_s after it starts); false: it starts
  // only on an empty GPU. Not under kExclusive.
  bool provisional_memory = false;
};

struct SimulatedJob {
  int64_t id = 0;                 // position in the trace
  std::string name;
  JobState state = JobState::kPending;
  int gpu = -1;                   // last GPU it ran on (the first, for a multi-GPU job)
  int gpus = 1;
  double submit_s = 0;
  double start_s = -1;            // start of its last (successful or final) attempt
  double end_s = -1;
  int attempts = 0;               // starts, retries included
  int oom_deaths = 0;
  double energy_j = 0;            // its share of its GPUs' energy (by time and SM share)
  std::optional<double> settled_share;  // the SM share measured when it settled, if it did and was seen
};

struct SimulationResult {
  std::string policy;
  std::string mode;
  std::vector<SimulatedJob> jobs;
  double total_s = 0;             // last completion (the trace starts at 0)
  double energy_j = 0;            // every GPU, idle time included, over total_s
  int oom_events = 0;
  int oom_unrecovered = 0;        // jobs that ended FAILED after too many OOM deaths
  int gpus_closed = 0;            // times the throughput rule closed a GPU
  int judged_joins = 0;           // jobs of known share that joined past the SM ceiling (gpu_ledger.h)
  int judged_closings = 0;        // of those, the ones whose rise was too small: their GPU closed
  int jobs_lost = 0;              // jobs not in a final state at the end (must be 0)
  double mean_wait_s = 0;         // submit to (last) start
  double mean_exec_s = 0;         // (last) start to end
  double mean_jct_s = 0;          // submit to end
};

// Runs `trace` to completion under the runner's rules: the same Scheduler
// core (gpu_ledger.h, queue_order.h, recovery.h), which also judges the
// throughput rule at each join's verdict. Model, in virtual time: a job progresses at
// 1 / max(1, sum of the SM activities on its GPU) of its solo speed under
// MPS, the same times (1 - shared_overhead) when time-sliced with others,
// and at full speed alone; a multi-GPU job at the speed of its slowest GPU.
// A job whose true memory does not fit in what is physically free dies of
// OOM oom_after_s after it starts and enters the recovery queue. A job's
// throughput as a fraction of alone is its rate, which the throughput rule
// reads.
// Deterministic. Throws std::invalid_argument for an unknown policy or a job
// asking for more GPUs than there are (or than one node has).
SimulationResult simulate(const std::vector<TraceJob>& trace, const SimulationOptions& options);

}  // namespace colo::sched
