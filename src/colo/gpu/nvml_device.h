#pragma once
// gpu::Device backed by NVML.

#include <mutex>
#include <vector>

#include "colo/gpu/device.h"
#include "colo/gpu/nvml_api.h"

namespace colo::gpu {

// One physical GPU seen through NVML. sample() and processes() serialise on
// an internal mutex, so they may be called from any thread.
//
// The total-energy counter costs about 4 ms of CPU per read on an H100
// (bench/results/gpu/summary.json, nvml_call_cost_us), forty times the rest
// of a sample together, so sample() reads it at most once per second; other
// samples carry no energy_j and energy_between() integrates power across
// the gaps.
class NvmlDevice : public Device {
 public:
  NvmlDevice(const nvml::Api& api, nvml::DeviceHandle handle, int index);
  ~NvmlDevice() override;

  const DeviceInfo& info() const override { return info_; }
  DeviceSample sample() override;
  std::vector<ProcessUsage> processes() override;

  // The least time between two samples that carry energy_j.
  static constexpr double kEnergyReadInterval_s = 1.0;

 private:
  void read_gpm(DeviceSample& sample);

  const nvml::Api& api_;
  nvml::DeviceHandle handle_;
  DeviceInfo info_;
  std::mutex mutex_;
  nvml::GpmSample previous_ = nullptr;  // last GPM sample, compared with the next
  nvml::GpmSample current_ = nullptr;
  bool have_previous_ = false;
  double last_energy_read_s_ = -1e300;
};

// Every GPU NVML sees; empty with `*why` set when NVML is unusable.
std::vector<DevicePtr> open_nvml_devices(std::string* why);

}  // namespace colo::gpu
