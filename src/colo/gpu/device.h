#pragma once
// What the scheduler, the sampler and the reports see of a GPU.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace colo::gpu {

// A MIG instance, usable as a device by its UUID (CUDA_VISIBLE_DEVICES=MIG-...).
struct MigInstance {
  int index = 0;
  std::string uuid;
  int64_t mem_total_bytes = 0;
};

// What does not change while a device is in use.
struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string uuid;
  int64_t mem_total_bytes = 0;
  int sm_count = 0;                // 0 when unknown
  bool mig_enabled = false;
  std::vector<MigInstance> mig_instances;
  bool gpm_supported = false;      // SM activity / occupancy readable (Hopper and newer)
};

// One process using a device, with the memory it holds.
struct ProcessUsage {
  uint32_t pid = 0;
  int64_t used_mem_bytes = 0;      // 0 when the driver does not report it
};

// One reading of a device. Fractions are in [0, 1]; nullopt means the device
// or driver cannot tell.
struct DeviceSample {
  int index = 0;
  double time_s = 0;               // monotonic clock (steady), for intervals
  double unix_s = 0;               // wall clock, for files
  int64_t mem_total_bytes = 0;
  int64_t mem_used_bytes = 0;
  int64_t mem_free_bytes = 0;
  std::optional<double> gpu_util;      // time a kernel was running (NVML's "utilization.gpu")
  std::optional<double> mem_util;      // time device memory was read or written
  std::optional<double> sm_active;     // GPM: SM activity over the last interval
  std::optional<double> sm_occupancy;  // GPM: achieved occupancy over the last interval
  std::optional<double> power_w;
  std::optional<double> energy_j;      // total-energy counter (since driver load)
};

// A GPU (real or simulated). sample() and processes() may be called from one
// sampling thread while info() is read from others; implementations document
// anything beyond that.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  // Current readings. GPM metrics compare with the previous call's, so the
  // first call of a session may take ~0.1 s to get two GPM samples.
  virtual DeviceSample sample() = 0;
  // Processes running compute work on the device (MPS clients included).
  virtual std::vector<ProcessUsage> processes() = 0;
};

using DevicePtr = std::shared_ptr<Device>;

// The devices of this machine: NVML's when libnvidia-ml.so.1 loads and sees
// GPUs, else none (with one log line saying why). When $COLO_SIMULATED_GPUS
// is N > 0, N simulated 80 GiB GPUs instead (for trying colo without a GPU),
// following the wall clock: their samples' times advance and their energy
// integrates power over that time. "0" gives none, as on a host without a
// GPU, even where NVML sees some. Either way, where CUDA_VISIBLE_DEVICES
// is set only the GPUs it names are returned, in its order
// (visible_positions(); VisibleDevicesError when it names a GPU that is
// not there, unless there is none at all: then none is returned, as before).
std::vector<DevicePtr> discover_devices();

}  // namespace colo::gpu
