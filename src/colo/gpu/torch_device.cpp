#include "colo/gpu/torch_device.h"

#include <torch/cuda.h>

#if COLO_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

#include "colo/core/error.h"

namespace colo::gpu {

int cuda_device_count() {
#if COLO_HAS_CUDA
  return static_cast<int>(torch::cuda::device_count());
#else
  return 0;
#endif
}

c10::Device resolve_device(const std::string& name, const std::string& source,
                           const std::string& field) {
  if (name == "auto") {
    return cuda_device_count() > 0 ? c10::Device(c10::DeviceType::CUDA, 0)
                                   : c10::Device(c10::DeviceType::CPU);
  }
  if (name == "cpu") return c10::Device(c10::DeviceType::CPU);
  int index = -1;
  if (name == "cuda") {
    index = 0;
  } else if (name.rfind("cuda:", 0) == 0) {
    try {
      size_t used = 0;
      index = std::stoi(name.substr(5), &used);
      if (used != name.size() - 5 || index < 0) index = -1;
    } catch (const std::exception&) {
      index = -1;
    }
  }
  if (index < 0) {
    throw InputError(source, field, "expected auto, cpu, cuda or cuda:N, got \"" + name + "\"");
  }
  int count = cuda_device_count();
  if (index >= count) {
    throw InputError(source, field,
                     "device " + name + " requested but " + std::to_string(count) +
                         " CUDA device(s) are visible" +
                         (COLO_HAS_CUDA ? "" : " (colo was built without CUDA)"));
  }
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
}

void reset_peak_memory(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#else
  (void)device;
#endif
}

std::optional<int64_t> peak_memory_bytes(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.allocated_bytes[0].peak;  // index 0: aggregate over pools
  }
#else
  (void)device;
#endif
  return std::nullopt;
}

std::optional<int64_t> peak_reserved_bytes(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.reserved_bytes[0].peak;
  }
#else
  (void)device;
#endif
  return std::nullopt;
}

void synchronize(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)device;
#endif
}

void synchronize_current_stream(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
#else
  (void)device;
#endif
}

void make_current(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) c10::cuda::set_device(device.index());
#else
  (void)device;
#endif
}

std::optional<int64_t> free_memory_bytes(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAGuard guard(device.index());
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) return static_cast<int64_t>(free);
  }
#else
  (void)device;
#endif
  return std::nullopt;
}

std::optional<int64_t> reserved_bytes(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.reserved_bytes[0].current;
  }
#else
  (void)device;
#endif
  return std::nullopt;
}

void release_cached_memory(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) {
    c10::cuda::device_synchronize();
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
#else
  (void)device;
#endif
}

std::string describe_device(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (device.is_cuda()) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, device.index()) == cudaSuccess) {
      return device.str() + " " + props.name;
    }
  }
#endif
  return device.str();
}

bool sleep_while_waiting(const c10::Device& device) {
#if COLO_HAS_CUDA
  if (!device.is_cuda()) return false;
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const int index = device.has_index() ? device.index() : current;
  if (index != current && cudaSetDevice(index) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  unsigned int flags = 0;
  const bool set = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) == cudaSuccess &&
                   cudaGetDeviceFlags(&flags) == cudaSuccess;
  if (!set) cudaGetLastError();
  if (index != current) cudaSetDevice(current);
  return set && (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync;
#else
  (void)device;
  return false;
#endif
}

}  // namespace colo::gpu
