#pragma once
// gpu::Device backed by NVML.

#include <mutex>
#include <vector>

#include "colo/gpu/device.h"
#include "colo/gpu/nvml_api.h"

namespace colo::gpu {

// One physical GPU seen through NVML. sample() and processes() serialise on
// an internal mutex, so they may be called from any thread.
class NvmlDevice : public Device {
 public:
  NvmlDevice(const nvml::Api& api, nvml::DeviceHandle handle, int index);
  ~NvmlDevice() override;

  const DeviceInfo& info() const override { return info_; }
  DeviceSample sample() override;
  std::vector<ProcessUsage> processes() override;

 private:
  void read_gpm(DeviceSample& sample);

  const nvml::Api& api_;
  nvml::DeviceHandle handle_;
  DeviceInfo info_;
  std::mutex mutex_;
  nvml::GpmSample previous_ = nullptr;  // last GPM sample, compared with the next
  nvml::GpmSample current_ = nullptr;
  bool have_previous_ = false;
};

// Every GPU NVML sees; empty with `*why` set when NVML is unusable.
std::vector<DevicePtr> open_nvml_devices(std::string* why);

}  // namespace colo::gpu
