// discover_devices(): NVML, or simulated GPUs on request, or none.

#include <cstdlib>
#include <string>

#include <spdlog/spdlog.h>

#include "colo/gpu/device.h"
#include "colo/gpu/nvml_device.h"
#include "colo/gpu/simulated_device.h"

namespace colo::gpu {

std::vector<DevicePtr> discover_devices() {
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

}  // namespace colo::gpu
