#pragma once
// The few NVML types and entry points colo uses, declared here so that colo
// builds without the driver's headers; the library is loaded at run time
// with dlopen("libnvidia-ml.so.1"). Layouts follow NVML's public nvml.h.

#include <cstdint>
#include <string>

namespace colo::gpu::nvml {

using Return = int;                 // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorInsufficientSize = 7;

using DeviceHandle = struct DeviceOpaque*;  // nvmlDevice_t
using GpmSample = struct GpmSampleOpaque*;  // nvmlGpmSample_t

struct Memory {                     // nvmlMemory_t
  unsigned long long total, free, used;
};

struct MemoryV2 {                   // nvmlMemory_v2_t
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
inline constexpr unsigned int kMemoryV2Version = sizeof(MemoryV2) | (2u << 24);

struct Utilization {                // nvmlUtilization_t
  unsigned int gpu, memory;         // percent
};

struct ProcessInfo {                // nvmlProcessInfo_t (v2 layout, used by _v3 calls)
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct GpmSupport {                 // nvmlGpmSupport_t
  unsigned int version;
  unsigned int isSupportedDevice;
};
inline constexpr unsigned int kGpmSupportVersion = 1;

struct GpmMetric {                  // nvmlGpmMetric_t
  unsigned int metricId;
  Return nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

inline constexpr int kGpmMetricMax = 98;  // NVML reads only numMetrics entries
struct GpmMetricsGet {              // nvmlGpmMetricsGet_t
  unsigned int version;
  unsigned int numMetrics;
  GpmSample sample1;
  GpmSample sample2;
  GpmMetric metrics[kGpmMetricMax];
};
inline constexpr unsigned int kGpmMetricsGetVersion = 1;
inline constexpr unsigned int kGpmMetricSmUtil = 2;        // NVML_GPM_METRIC_SM_UTIL, percent
inline constexpr unsigned int kGpmMetricSmOccupancy = 3;   // NVML_GPM_METRIC_SM_OCCUPANCY, percent

inline constexpr int kDeviceNameBufferSize = 96;
inline constexpr int kDeviceUuidBufferSize = 96;

// Entry points, resolved by name from the library.
struct Api {
  Return (*Init)();                                               // nvmlInit_v2
  Return (*Shutdown)();
  const char* (*ErrorString)(Return);
  Return (*DeviceGetCount)(unsigned int*);                        // _v2
  Return (*DeviceGetHandleByIndex)(unsigned int, DeviceHandle*);  // _v2
  Return (*DeviceGetName)(DeviceHandle, char*, unsigned int);
  Return (*DeviceGetUUID)(DeviceHandle, char*, unsigned int);
  Return (*DeviceGetMemoryInfo)(DeviceHandle, Memory*);
  Return (*DeviceGetMemoryInfoV2)(DeviceHandle, MemoryV2*);       // optional
  Return (*DeviceGetUtilizationRates)(DeviceHandle, Utilization*);
  Return (*DeviceGetPowerUsage)(DeviceHandle, unsigned int*);     // milliwatts
  Return (*DeviceGetTotalEnergyConsumption)(DeviceHandle, unsigned long long*);  // millijoules
  Return (*DeviceGetComputeRunningProcesses)(DeviceHandle, unsigned int*, ProcessInfo*);     // _v3
  Return (*DeviceGetMPSComputeRunningProcesses)(DeviceHandle, unsigned int*, ProcessInfo*);  // _v3, optional
  Return (*DeviceGetMigMode)(DeviceHandle, unsigned int*, unsigned int*);                  // optional
  Return (*DeviceGetMaxMigDeviceCount)(DeviceHandle, unsigned int*);                       // optional
  Return (*DeviceGetMigDeviceHandleByIndex)(DeviceHandle, unsigned int, DeviceHandle*);    // optional
  Return (*GpmQueryDeviceSupport)(DeviceHandle, GpmSupport*);     // optional (GPM)
  Return (*GpmSampleAlloc)(GpmSample*);
  Return (*GpmSampleFree)(GpmSample);
  Return (*GpmSampleGet)(DeviceHandle, GpmSample);
  Return (*GpmMetricsGet)(GpmMetricsGet*);
};

// The loaded library, initialised once per process; nullptr when it cannot
// be loaded or initialised, with the reason in `*why` (if given).
const Api* load(std::string* why);

}  // namespace colo::gpu::nvml
