#include "colo/gpu/nvml_device.h"

#include <chrono>
#include <thread>

#include "colo/core/stopwatch.h"

namespace colo::gpu {
namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<MigInstance> mig_instances(const nvml::Api& api, nvml::DeviceHandle handle) {
  std::vector<MigInstance> instances;
  if (!api.DeviceGetMaxMigDeviceCount || !api.DeviceGetMigDeviceHandleByIndex) return instances;
  unsigned int count = 0;
  if (api.DeviceGetMaxMigDeviceCount(handle, &count) != nvml::kSuccess) return instances;
  for (unsigned int i = 0; i < count; ++i) {
    nvml::DeviceHandle mig = nullptr;
    if (api.DeviceGetMigDeviceHandleByIndex(handle, i, &mig) != nvml::kSuccess) continue;
    MigInstance instance;
    instance.index = static_cast<int>(i);
    char uuid[nvml::kDeviceUuidBufferSize] = {0};
    if (api.DeviceGetUUID(mig, uuid, sizeof uuid) == nvml::kSuccess) instance.uuid = uuid;
    nvml::Memory memory{};
    if (api.DeviceGetMemoryInfo(mig, &memory) == nvml::kSuccess) {
      instance.mem_total_bytes = static_cast<int64_t>(memory.total);
    }
    instances.push_back(instance);
  }
  return instances;
}

void append_processes(nvml::DeviceHandle handle,
                      nvml::Return (*query)(nvml::DeviceHandle, unsigned int*, nvml::ProcessInfo*),
                      std::vector<ProcessUsage>& out) {
  if (query == nullptr) return;
  std::vector<nvml::ProcessInfo> infos(64);
  unsigned int count = static_cast<unsigned int>(infos.size());
  nvml::Return status = query(handle, &count, infos.data());
  if (status == nvml::kErrorInsufficientSize) {
    infos.resize(count + 16);
    count = static_cast<unsigned int>(infos.size());
    status = query(handle, &count, infos.data());
  }
  if (status != nvml::kSuccess) return;
  for (unsigned int i = 0; i < count; ++i) {
    bool seen = false;
    for (const auto& p : out) seen = seen || p.pid == infos[i].pid;
    if (seen) continue;
    // NVML_VALUE_NOT_AVAILABLE (all ones) when the driver cannot tell.
    unsigned long long used = infos[i].usedGpuMemory;
    out.push_back({infos[i].pid, used == ~0ull ? 0 : static_cast<int64_t>(used)});
  }
}

}  // namespace

NvmlDevice::NvmlDevice(const nvml::Api& api, nvml::DeviceHandle handle, int index)
    : api_(api), handle_(handle) {
  info_.index = index;
  char name[nvml::kDeviceNameBufferSize] = {0};
  if (api.DeviceGetName(handle, name, sizeof name) == nvml::kSuccess) info_.name = name;
  char uuid[nvml::kDeviceUuidBufferSize] = {0};
  if (api.DeviceGetUUID(handle, uuid, sizeof uuid) == nvml::kSuccess) info_.uuid = uuid;
  nvml::Memory memory{};
  if (api.DeviceGetMemoryInfo(handle, &memory) == nvml::kSuccess) {
    info_.mem_total_bytes = static_cast<int64_t>(memory.total);
  }
  unsigned int current = 0, pending = 0;
  if (api.DeviceGetMigMode && api.DeviceGetMigMode(handle, &current, &pending) == nvml::kSuccess) {
    info_.mig_enabled = current == 1;
    if (info_.mig_enabled) info_.mig_instances = mig_instances(api, handle);
  }
  if (api.GpmQueryDeviceSupport && api.GpmSampleAlloc && api.GpmSampleGet && api.GpmMetricsGet) {
    nvml::GpmSupport support{nvml::kGpmSupportVersion, 0};
    info_.gpm_supported = api.GpmQueryDeviceSupport(handle, &support) == nvml::kSuccess &&
                          support.isSupportedDevice != 0 &&
                          api.GpmSampleAlloc(&previous_) == nvml::kSuccess &&
                          api.GpmSampleAlloc(&current_) == nvml::kSuccess;
  }
}

NvmlDevice::~NvmlDevice() {
  if (previous_ && api_.GpmSampleFree) api_.GpmSampleFree(previous_);
  if (current_ && api_.GpmSampleFree) api_.GpmSampleFree(current_);
}

void NvmlDevice::read_gpm(DeviceSample& sample) {
  if (!info_.gpm_supported) return;
  if (!have_previous_) {
    if (api_.GpmSampleGet(handle_, previous_) != nvml::kSuccess) return;
    have_previous_ = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (api_.GpmSampleGet(handle_, current_) != nvml::kSuccess) return;
  nvml::GpmMetricsGet request{};
  request.version = nvml::kGpmMetricsGetVersion;
  request.numMetrics = 2;
  request.sample1 = previous_;
  request.sample2 = current_;
  request.metrics[0].metricId = nvml::kGpmMetricSmUtil;
  request.metrics[1].metricId = nvml::kGpmMetricSmOccupancy;
  if (api_.GpmMetricsGet(&request) == nvml::kSuccess) {
    if (request.metrics[0].nvmlReturn == nvml::kSuccess) sample.sm_active = request.metrics[0].value / 100.0;
    if (request.metrics[1].nvmlReturn == nvml::kSuccess) sample.sm_occupancy = request.metrics[1].value / 100.0;
  }
  std::swap(previous_, current_);
}

DeviceSample NvmlDevice::sample() {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceSample s;
  s.index = info_.index;
  read_gpm(s);
  s.time_s = steady_s();
  s.unix_s = unix_time_s();
  nvml::MemoryV2 memory2{nvml::kMemoryV2Version, 0, 0, 0, 0};
  nvml::Memory memory{};
  if (api_.DeviceGetMemoryInfoV2 && api_.DeviceGetMemoryInfoV2(handle_, &memory2) == nvml::kSuccess) {
    s.mem_total_bytes = static_cast<int64_t>(memory2.total);
    s.mem_used_bytes = static_cast<int64_t>(memory2.used);
    s.mem_free_bytes = static_cast<int64_t>(memory2.free);
  } else if (api_.DeviceGetMemoryInfo(handle_, &memory) == nvml::kSuccess) {
    s.mem_total_bytes = static_cast<int64_t>(memory.total);
    s.mem_used_bytes = static_cast<int64_t>(memory.used);
    s.mem_free_bytes = static_cast<int64_t>(memory.free);
  }
  nvml::Utilization utilization{};
  if (api_.DeviceGetUtilizationRates(handle_, &utilization) == nvml::kSuccess) {
    s.gpu_util = utilization.gpu / 100.0;
    s.mem_util = utilization.memory / 100.0;
  }
  unsigned int milliwatts = 0;
  if (api_.DeviceGetPowerUsage(handle_, &milliwatts) == nvml::kSuccess) s.power_w = milliwatts / 1000.0;
  unsigned long long millijoules = 0;
  if (api_.DeviceGetTotalEnergyConsumption && s.time_s - last_energy_read_s_ >= kEnergyReadInterval_s &&
      api_.DeviceGetTotalEnergyConsumption(handle_, &millijoules) == nvml::kSuccess) {
    s.energy_j = static_cast<double>(millijoules) / 1000.0;
    last_energy_read_s_ = s.time_s;
  }
  return s;
}

std::vector<ProcessUsage> NvmlDevice::processes() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ProcessUsage> out;
  append_processes(handle_, api_.DeviceGetComputeRunningProcesses, out);
  append_processes(handle_, api_.DeviceGetMPSComputeRunningProcesses, out);
  return out;
}

std::vector<DevicePtr> open_nvml_devices(std::string* why) {
  std::vector<DevicePtr> devices;
  const nvml::Api* api = nvml::load(why);
  if (api == nullptr) return devices;
  unsigned int count = 0;
  nvml::Return status = api->DeviceGetCount(&count);
  if (status != nvml::kSuccess) {
    *why = std::string("nvmlDeviceGetCount failed: ") + api->ErrorString(status);
    return devices;
  }
  for (unsigned int i = 0; i < count; ++i) {
    nvml::DeviceHandle handle = nullptr;
    if (api->DeviceGetHandleByIndex(i, &handle) == nvml::kSuccess) {
      devices.push_back(std::make_shared<NvmlDevice>(*api, handle, static_cast<int>(i)));
    }
  }
  if (devices.empty()) *why = "NVML sees no GPU";
  return devices;
}

}  // namespace colo::gpu
