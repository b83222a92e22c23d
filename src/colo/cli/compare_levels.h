#pragma once
// The levels at which `colo compare` shares GPUs among a workload's
// trainings, and one measured run of a workload at one level.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/cli/compare_workload.h"
#include "colo/gpu/device.h"

namespace colo::cli {

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
  double timeout_s = 120;        // a level's run is stopped (and reported failed) past this
  double sample_interval_s = 0.2;
  std::string out_dir;           // this run's logs, outputs and timeline_<level>.csv go under here
  std::string mps_control = "nvidia-cuda-mps-control";
};

// One measured run of one level. Throughput is trained samples over the
// wall time from the first process's start to the last one's end; energy is
// the GPUs' energy counters over that window.
struct LevelRun {
  ShareLevel level = ShareLevel::kSequential;
  bool ok = false;
  std::string error;                  // why it failed, when !ok
  double wall_s = 0;
  int64_t samples = 0;
  double samples_per_s = 0;
  std::optional<double> energy_j;     // nullopt without a GPU energy counter
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
// failing job or MPS daemon: the run comes back !ok with the reason.
LevelRun run_share_level(ShareLevel level, const CompareWorkload& workload, const std::vector<gpu::DevicePtr>& devices,
                         const LevelOptions& options);

nlohmann::json to_json(const LevelRun& run);

}  // namespace colo::cli
