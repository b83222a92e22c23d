// Measures the CPU cost of each NVML call colo's sampler makes, to find what
// bounds the sampler's overhead. Prints one JSON object: microseconds of
// thread CPU time per call. Needs a GPU; prints {"error": ...} otherwise.

#include <sys/resource.h>

#include <cstdio>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "colo/gpu/nvml_api.h"

namespace {

double thread_cpu_us() {
  rusage usage{};
  ::getrusage(RUSAGE_THREAD, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
}

double cost_us(int reps, const std::function<void()>& call) {
  call();
  double start = thread_cpu_us();
  for (int i = 0; i < reps; ++i) call();
  return (thread_cpu_us() - start) / reps;
}

}  // namespace

int main() {
  using namespace colo::gpu;
  std::string why;
  const nvml::Api* api = nvml::load(&why);
  nvml::DeviceHandle handle = nullptr;
  if (api == nullptr || api->DeviceGetHandleByIndex(0, &handle) != nvml::kSuccess) {
    std::printf("%s\n", nlohmann::json({{"error", why.empty() ? "no GPU 0" : why}}).dump().c_str());
    return 1;
  }
  nlohmann::json result;
  const int reps = 200;
  nvml::Memory memory{};
  nvml::MemoryV2 memory2{nvml::kMemoryV2Version, 0, 0, 0, 0};
  nvml::Utilization utilization{};
  unsigned int milliwatts = 0;
  unsigned long long millijoules = 0;
  result["memory_info_us"] = cost_us(reps, [&] { api->DeviceGetMemoryInfo(handle, &memory); });
  if (api->DeviceGetMemoryInfoV2) {
    result["memory_info_v2_us"] = cost_us(reps, [&] { api->DeviceGetMemoryInfoV2(handle, &memory2); });
  }
  result["utilization_us"] = cost_us(reps, [&] { api->DeviceGetUtilizationRates(handle, &utilization); });
  result["power_us"] = cost_us(reps, [&] { api->DeviceGetPowerUsage(handle, &milliwatts); });
  if (api->DeviceGetTotalEnergyConsumption) {
    result["energy_us"] = cost_us(reps, [&] { api->DeviceGetTotalEnergyConsumption(handle, &millijoules); });
  }
  if (api->GpmSampleAlloc) {
    nvml::GpmSample a = nullptr, b = nullptr;
    api->GpmSampleAlloc(&a);
    api->GpmSampleAlloc(&b);
    result["gpm_sample_get_us"] = cost_us(reps, [&] { api->GpmSampleGet(handle, a); });
    api->GpmSampleGet(handle, b);
    nvml::GpmMetricsGet request{};
    result["gpm_metrics_get_us"] = cost_us(reps, [&] {
      request = {};
      request.version = nvml::kGpmMetricsGetVersion;
      request.numMetrics = 2;
      request.sample1 = a;
      request.sample2 = b;
      request.metrics[0].metricId = nvml::kGpmMetricSmUtil;
      request.metrics[1].metricId = nvml::kGpmMetricSmOccupancy;
      api->GpmMetricsGet(&request);
    });
    api->GpmSampleFree(a);
    api->GpmSampleFree(b);
  }
  std::printf("%s\n", result.dump().c_str());
  return 0;
}
