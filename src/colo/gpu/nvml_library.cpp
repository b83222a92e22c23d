// Loads libnvidia-ml.so.1 at run time and resolves the entry points of nvml_api.h.

#include <dlfcn.h>

#include <mutex>

#include "colo/gpu/nvml_api.h"

namespace colo::gpu::nvml {
namespace {

struct Loaded {
  Api api{};
  bool ok = false;
  std::string why;
};

template <typename F>
bool resolve(void* library, const char* name, F*& slot, bool required, std::string* why) {
  slot = reinterpret_cast<F*>(::dlsym(library, name));
  if (slot == nullptr && required) {
    *why = std::string("libnvidia-ml.so.1 lacks ") + name;
    return false;
  }
  return true;
}

Loaded load_once() {
  Loaded loaded;
  void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    loaded.why = "cannot load libnvidia-ml.so.1 (no NVIDIA driver?)";
    return loaded;
  }
  Api& a = loaded.api;
  std::string* why = &loaded.why;
  bool ok = resolve(library, "nvmlInit_v2", a.Init, true, why) &&
            resolve(library, "nvmlShutdown", a.Shutdown, true, why) &&
            resolve(library, "nvmlErrorString", a.ErrorString, true, why) &&
            resolve(library, "nvmlDeviceGetCount_v2", a.DeviceGetCount, true, why) &&
            resolve(library, "nvmlDeviceGetHandleByIndex_v2", a.DeviceGetHandleByIndex, true, why) &&
            resolve(library, "nvmlDeviceGetName", a.DeviceGetName, true, why) &&
            resolve(library, "nvmlDeviceGetUUID", a.DeviceGetUUID, true, why) &&
            resolve(library, "nvmlDeviceGetMemoryInfo", a.DeviceGetMemoryInfo, true, why) &&
            resolve(library, "nvmlDeviceGetMemoryInfo_v2", a.DeviceGetMemoryInfoV2, false, why) &&
            resolve(library, "nvmlDeviceGetUtilizationRates", a.DeviceGetUtilizationRates, true, why) &&
            resolve(library, "nvmlDeviceGetPowerUsage", a.DeviceGetPowerUsage, true, why) &&
            resolve(library, "nvmlDeviceGetTotalEnergyConsumption", a.DeviceGetTotalEnergyConsumption, false, why) &&
            resolve(library, "nvmlDeviceGetComputeRunningProcesses_v3", a.DeviceGetComputeRunningProcesses, true, why) &&
            resolve(library, "nvmlDeviceGetMPSComputeRunningProcesses_v3", a.DeviceGetMPSComputeRunningProcesses, false, why) &&
            resolve(library, "nvmlDeviceGetMigMode", a.DeviceGetMigMode, false, why) &&
            resolve(library, "nvmlDeviceGetMaxMigDeviceCount", a.DeviceGetMaxMigDeviceCount, false, why) &&
            resolve(library, "nvmlDeviceGetMigDeviceHandleByIndex", a.DeviceGetMigDeviceHandleByIndex, false, why) &&
            resolve(library, "nvmlGpmQueryDeviceSupport", a.GpmQueryDeviceSupport, false, why) &&
            resolve(library, "nvmlGpmSampleAlloc", a.GpmSampleAlloc, false, why) &&
            resolve(library, "nvmlGpmSampleFree", a.GpmSampleFree, false, why) &&
            resolve(library, "nvmlGpmSampleGet", a.GpmSampleGet, false, why) &&
            resolve(library, "nvmlGpmMetricsGet", a.GpmMetricsGet, false, why);
  if (!ok) return loaded;
  Return status = a.Init();
  if (status != kSuccess) {
    loaded.why = std::string("nvmlInit failed: ") + a.ErrorString(status);
    return loaded;
  }
  loaded.ok = true;
  return loaded;  // the library stays loaded for the life of the process
}

}  // namespace

const Api* load(std::string* why) {
  static const Loaded loaded = load_once();
  if (!loaded.ok && why != nullptr) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

}  // namespace colo::gpu::nvml
