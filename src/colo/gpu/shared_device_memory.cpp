#include "colo/gpu/shared_device_memory.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include <ATen/ATen.h>

#if COLO_HAS_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace colo::gpu {

#if COLO_HAS_CUDA
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(status));
  }
}

}  // namespace

bool shared_device_memory_available() { return true; }

SharedDeviceBuffer::SharedDeviceBuffer(int64_t numel, c10::Device device, at::ScalarType dtype) {
  if (!device.is_cuda()) throw std::runtime_error("shared device memory needs a CUDA device, not " + device.str());
  c10::cuda::CUDAGuard guard(device);
  check(cudaMalloc(&pointer_, static_cast<size_t>(std::max<int64_t>(numel, 1)) * c10::elementSize(dtype)), "cudaMalloc");
  cudaIpcMemHandle_t handle;
  check(cudaIpcGetMemHandle(&handle, pointer_), "cudaIpcGetMemHandle");
  handle_.assign(reinterpret_cast<const char*>(&handle), sizeof(handle));
  tensor_ = at::from_blob(pointer_, {numel}, at::TensorOptions().dtype(dtype).device(device));
}

SharedDeviceBuffer::~SharedDeviceBuffer() {
  tensor_ = at::Tensor();
  if (pointer_ != nullptr) cudaFree(pointer_);
}

at::Tensor map_shared_device_buffer(const std::string& handle, int64_t numel, c10::Device device,
                                    at::ScalarType dtype) {
  if (!device.is_cuda()) throw std::runtime_error("shared device memory maps onto a CUDA device, not " + device.str());
  c10::cuda::CUDAGuard guard(device);
  cudaIpcMemHandle_t ipc;
  if (handle.size() != sizeof(ipc)) {
    throw std::runtime_error("a shared device buffer handle has " + std::to_string(sizeof(ipc)) + " bytes, got " +
                             std::to_string(handle.size()));
  }
  std::copy(handle.begin(), handle.end(), reinterpret_cast<char*>(&ipc));
  void* pointer = nullptr;
  check(cudaIpcOpenMemHandle(&pointer, ipc, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  return at::from_blob(pointer, {numel}, [](void* p) { cudaIpcCloseMemHandle(p); },
                       at::TensorOptions().dtype(dtype).device(device));
}

void finish_writes_for_other_processes(const c10::Device& device) {
  if (!device.is_cuda()) return;
  c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
}

std::string fatal_device_error(const c10::Device& device) {
  if (!device.is_cuda()) return {};
  c10::cuda::CUDAGuard guard(device);
  const cudaError_t status = cudaStreamQuery(c10::cuda::getCurrentCUDAStream(device.index()).stream());
  if (status == cudaSuccess || status == cudaErrorNotReady) return {};
  return cudaGetErrorString(status);
}

PinnedHostMemory::PinnedHostMemory(void* base, int64_t bytes) {
  const cudaError_t status = cudaHostRegister(base, static_cast<size_t>(bytes), cudaHostRegisterDefault);
  if (status == cudaSuccess) {
    base_ = base;
  } else {
    why_ = std::string("cudaHostRegister failed: ") + cudaGetErrorString(status);
    cudaGetLastError();
  }
}

PinnedHostMemory::~PinnedHostMemory() {
  if (base_ != nullptr) cudaHostUnregister(base_);
}

StreamPoint::StreamPoint(const c10::Device& device) {
  if (!device.is_cuda()) return;
  c10::cuda::CUDAGuard guard(device);
  cudaEvent_t event = nullptr;
  // A blocking event: wait() sleeps instead of spinning on a core the
  // other processes (a shared loader's decoders) could use.
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync), "cudaEventCreate");
  check(cudaEventRecord(event, c10::cuda::getCurrentCUDAStream(device.index()).stream()), "cudaEventRecord");
  event_ = event;
}

StreamPoint::~StreamPoint() {
  if (event_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

bool StreamPoint::passed() const {
  return event_ == nullptr || cudaEventQuery(static_cast<cudaEvent_t>(event_)) != cudaErrorNotReady;
}

void StreamPoint::wait() const {
  if (event_ != nullptr) check(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "cudaEventSynchronize");
}

void StreamPoint::order_current_stream_after(const c10::Device& device) const {
  if (event_ == nullptr || !device.is_cuda()) return;
  check(cudaStreamWaitEvent(c10::cuda::getCurrentCUDAStream(device.index()).stream(), static_cast<cudaEvent_t>(event_), 0),
        "cudaStreamWaitEvent");
}

struct CopyStream::Impl {
  c10::cuda::CUDAStream stream;
};

CopyStream::CopyStream(const c10::Device& device) : device_(device) {
  if (device.is_cuda()) impl_ = std::make_unique<Impl>(Impl{c10::cuda::getStreamFromPool(false, device.index())});
}

CopyStream::~CopyStream() = default;

StreamPoint CopyStream::run(const std::function<std::vector<at::Tensor>()>& enqueue) {
  if (!impl_) {
    enqueue();
    return StreamPoint(device_);
  }
  c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device_.index());
  std::optional<StreamPoint> done;
  std::vector<at::Tensor> outputs;
  {
    c10::cuda::CUDAStreamGuard guard(impl_->stream);
    outputs = enqueue();
    done.emplace(device_);
  }
  done->order_current_stream_after(device_);
  for (const at::Tensor& t : outputs) t.record_stream(current);
  return std::move(*done);
}

#else

bool shared_device_memory_available() { return false; }

SharedDeviceBuffer::SharedDeviceBuffer(int64_t, c10::Device, at::ScalarType) {
  throw std::runtime_error("shared device memory needs a CUDA build of colo");
}

SharedDeviceBuffer::~SharedDeviceBuffer() = default;

at::Tensor map_shared_device_buffer(const std::string&, int64_t, c10::Device, at::ScalarType) {
  throw std::runtime_error("shared device memory needs a CUDA build of colo");
}

void finish_writes_for_other_processes(const c10::Device&) {}

std::string fatal_device_error(const c10::Device&) { return {}; }

PinnedHostMemory::PinnedHostMemory(void*, int64_t) : why_("a CPU build of colo") {}
PinnedHostMemory::~PinnedHostMemory() = default;

StreamPoint::StreamPoint(const c10::Device&) {}
StreamPoint::~StreamPoint() = default;
bool StreamPoint::passed() const { return true; }
void StreamPoint::wait() const {}
void StreamPoint::order_current_stream_after(const c10::Device&) const {}

struct CopyStream::Impl {};
CopyStream::CopyStream(const c10::Device& device) : device_(device) {}
CopyStream::~CopyStream() = default;

StreamPoint CopyStream::run(const std::function<std::vector<at::Tensor>()>& enqueue) {
  enqueue();
  return StreamPoint(device_);
}

#endif

StreamPoint::StreamPoint(StreamPoint&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }

StreamPoint& StreamPoint::operator=(StreamPoint&& other) noexcept {
  std::swap(event_, other.event_);
  return *this;
}

}  // namespace colo::gpu
