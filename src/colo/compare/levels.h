#pragma once
// The levels at which `colo compare` shares GPUs among a workload's
// trainings, and one measured run of a workload at one level.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/compare/workload.h"
#include "colo/gpu/device.h"

namespace colo::compare {

enum class ShareLevel {
  kSequential,  // one process at a time: the baseline
  kTimeslice,   // every process at once, no MPS (the driver time-slices)
  kMps,         // every process at once under MPS, equal active-thread shares
  kSlots,       // k processes at once, chosen up front, not enforced (Ray Tune's fractional GPUs)
  kScheduler,   // colo's scheduler: magm placement under MPS with memory limits
  kFused,       // one process: the models as fused arrays
  kStreams,     // one process: every model on its own CUDA stream
};

std::vector<ShareLevel> all_share_levels();
std::string to_string(ShareLevel level);
// Throws std::invalid_argument naming the known levels.
ShareLevel share_level_from_string(const std::string& name);

struct LevelOptions {
  int slots = 4;                 // kSlots: processes at once
  // A level's run is stopped past this: measured from its processes'
  // progress so far when they all report it, else reported failed.
  double timeout_s = 120;
  double sample_interval_s = 0.2;
  std::string out_dir;           // this run's logs, outputs and timeline_<level>.csv go under here
  std::string mps_control = "nvidia-cuda-mps-control";
};

// What a level's samples/s and samples/J are counted over.
enum class ThroughputBasis {
  kTraining,  // the time some process trained past its warm-up (progress.h): start-up left out
  kWall,      // the wall time from the first process's start to the last one's end
};
std::string to_string(ThroughputBasis basis);

// One measured run of one level. Every process reports its progress
// ($COLO_PROGRESS_FILE); where all of them do, the training figures leave
// start-up and warm-up out, as colo's steady-state benchmarks do. The wall
// figures count everything from the first start to the last end (time and
// energy to the end of the workload).
struct LevelRun {
  ShareLevel level = ShareLevel::kSequential;
  bool ok = false;
  std::string error;                  // why it failed, when !ok
  bool stopped_at_budget = false;     // ok, but stopped at the time limit: figures from progress so far
  double wall_s = 0;
  int64_t samples = 0;
  std::optional<double> energy_j;     // over the wall window; nullopt without a GPU energy counter
  double wall_samples_per_s = 0;
  std::optional<double> wall_samples_per_j;
  std::optional<double> train_s;      // the training window's length, when every process reported
  std::optional<double> train_samples_per_s;
  std::optional<double> train_samples_per_j;
  // Per job of the workload (its order): samples trained in its training
  // spans (a one-process level's split evenly: its models train in
  // lockstep), and those samples over its own training seconds, which is
  // its throughput alone when the level is sequential; the union of every
  // job's spans and the GPUs' energy inside it. Empty without progress.
  std::vector<double> job_span_samples;
  std::vector<double> job_own_samples_per_s;
  double union_s = 0;
  std::optional<double> union_energy_j;
  // Alone-seconds of training done (each job's samples over its throughput
  // alone, summed) per second of the union, and per joule: 1 for one job at
  // a time, N for N jobs at once unslowed. The figures that weigh jobs of
  // different cost by what their samples cost. Set by normalise_against()
  // when the round's sequential level measured every job.
  std::optional<double> normalised_throughput;
  std::optional<double> alone_s_per_j;
  size_t train_occupancy = 0;         // processes training at once in the window (TrainingWindow)
  bool train_full_occupancy = false;  // the window is the steady state, not the union of spans
  // Timeslice and mps: seconds between the first and the last process's
  // first progress report, which they waited for to train together
  // (core/start_together.h); nullopt where fewer than two reported.
  std::optional<double> start_spread_s;
  // The figures compared across levels: the training ones or the wall ones
  // (use_basis); every level of one comparison must use the same.
  ThroughputBasis basis = ThroughputBasis::kWall;
  double samples_per_s = 0;
  std::optional<double> samples_per_j;
  std::optional<double> mean_sm;      // SM activity (GPM), else kernel-time utilisation, 0..1
  std::optional<int64_t> peak_mem_bytes;  // device memory in use, highest sample
  std::string timeline_csv;
};

// Why `level` cannot run this workload here ("" when it can): no GPU for MPS
// or the scheduler, no fused or streams command, slots that would equal
// time-slicing.
std::string level_unavailable(ShareLevel level, const CompareWorkload& workload, bool has_gpus,
                              const LevelOptions& options);

// Runs the workload once at `level` and measures it. Never throws for a
// failing job or MPS daemon: the run comes back !ok with the reason. Run
// again into the same out_dir, it first removes the level's earlier logs
// and progress files (and the scheduler level's job store), so that each
// holds this run's alone; the processes' outputs are left in place. Throws
// std::runtime_error when one of those cannot be removed.
LevelRun run_share_level(ShareLevel level, const CompareWorkload& workload, const std::vector<gpu::DevicePtr>& devices,
                         const LevelOptions& options);

// Sets `run`'s normalised figures from `sequential`'s per-job throughput
// alone (the same round's sequential run). Leaves them unset when
// `sequential` lacks a job's figure or `run` has no training window.
void normalise_against(LevelRun& run, const LevelRun& sequential);

// Sets samples_per_s and samples_per_j from the training figures (which
// must be present) or the wall ones.
void use_basis(LevelRun& run, ThroughputBasis basis);

nlohmann::json to_json(const LevelRun& run);

}  // namespace colo::compare
