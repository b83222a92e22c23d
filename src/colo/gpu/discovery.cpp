// discover_devices(): NVML, or simulated GPUs on request, or none.

#include <cstdlib>
#include <string>

#include <spdlog/spdlog.h>

#include "colo/gpu/device.h"
#include "colo/gpu/nvml_device.h"
#include "colo/gpu/simulated_device.h"
#include "colo/gpu/visible_devices.h"

namespace colo::gpu {
namespace {

// The devices CUDA_VISIBLE_DEVICES names, in its order (all when it is unset).
std::vector<DevicePtr> keep_visible(std::vector<DevicePtr> devices) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  // No GPU seen: nothing to choose from (a Slurm test node's stand-in devices).
  if (visible == nullptr || devices.empty()) return devices;
  std::vector<DeviceInfo> infos;
  for (const auto& d : devices) infos.push_back(d->info());
  std::vector<DevicePtr> kept;
  for (size_t position : visible_positions(infos, std::string(visible))) kept.push_back(devices[position]);
  if (kept.size() < devices.size()) {
    spdlog::info("using {} of {} GPU(s): CUDA_VISIBLE_DEVICES={}", kept.size(), devices.size(), visible);
  }
  return kept;
}

std::vector<DevicePtr> all_devices() {
  if (const char* simulated = std::getenv("COLO_SIMULATED_GPUS")) {
    int count = std::atoi(simulated);
    if (count > 0) {
      std::vector<DevicePtr> devices;
      for (int i = 0; i < count; ++i) {
        devices.push_back(std::make_shared<SimulatedDevice>(i, SimulatedGpuSpec{}, SimulatedClock::kWallClock));
      }
      spdlog::info("using {} simulated GPU(s) ($COLO_SIMULATED_GPUS)", count);
      return devices;
    }
    if (std::string(simulated) == "0") {  // a host without a GPU, where there is one
      spdlog::info("no GPU: $COLO_SIMULATED_GPUS=0");
      return {};
    }
  }
  std::string why;
  auto devices = open_nvml_devices(&why);
  if (devices.empty()) spdlog::info("no GPU: {}", why);
  return devices;
}

}  // namespace

std::vector<DevicePtr> discover_devices() { return keep_visible(all_devices()); }

}  // namespace colo::gpu
