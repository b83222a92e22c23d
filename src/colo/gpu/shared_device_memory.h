#pragma once
// Device memory that another process on the same host maps (CUDA IPC), so
// tensors move device to device between processes (over NVLink where the
// GPUs have it) with no copy through host memory. The parameter server keeps
// each worker's gradient inbox and parameter outbox in it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

namespace colo::gpu {

// Whether this build can share device memory between processes (a CUDA
// build); when false the constructors below throw std::runtime_error.
bool shared_device_memory_available();

// A buffer of `numel` elements of `dtype` on `device`, allocated outside the
// caching allocator so that it can be exported whole. Freed when destroyed;
// a process that mapped it must unmap (drop its tensor) before that.
class SharedDeviceBuffer {
 public:
  SharedDeviceBuffer(int64_t numel, c10::Device device, at::ScalarType dtype = at::kFloat);
  ~SharedDeviceBuffer();
  SharedDeviceBuffer(const SharedDeviceBuffer&) = delete;
  SharedDeviceBuffer& operator=(const SharedDeviceBuffer&) = delete;

  // The buffer as a [numel] tensor on its device (a view: no copy).
  const at::Tensor& tensor() const { return tensor_; }
  // An opaque handle (a few dozen bytes) that map_shared_device_buffer
  // turns back into the buffer in another process of this host.
  const std::string& handle() const { return handle_; }

 private:
  void* pointer_ = nullptr;
  at::Tensor tensor_;
  std::string handle_;
};

// Maps another process's buffer, given its handle, size and element type,
// into this process as a [numel] tensor on `device`, the CUDA device of this
// process that reads and writes it; the memory may lie on another GPU of the
// host, which `device` then reaches by peer access (NVLink or PCIe). The
// mapping is closed when the last tensor viewing it is destroyed.
// std::runtime_error when the handle is not valid here (another host, or
// GPUs without peer access).
at::Tensor map_shared_device_buffer(const std::string& handle, int64_t numel, c10::Device device,
                                    at::ScalarType dtype = at::kFloat);

// Waits until the work queued on `device`'s current stream is done, so
// another process may read what it wrote; no effect on the CPU.
void finish_writes_for_other_processes(const c10::Device& device);

// The fatal error this process's CUDA context on `device` reports now (a
// sticky one: a fault of this process's work or, under MPS, of any client's
// on that GPU), as CUDA words it; empty while there is none, and always on
// the CPU or in a CPU build. Queries without waiting.
std::string fatal_device_error(const c10::Device& device);

// Host memory made page-locked where it lies (cudaHostRegister), so that
// copies from it to a device run asynchronously instead of being staged by
// the CPU. Unregistered when destroyed. pinned() is false, with why(), when
// it could not be (a CPU build, a mapping CUDA refuses): copies still work,
// synchronously.
class PinnedHostMemory {
 public:
  PinnedHostMemory(void* base, int64_t bytes);
  ~PinnedHostMemory();
  PinnedHostMemory(const PinnedHostMemory&) = delete;
  PinnedHostMemory& operator=(const PinnedHostMemory&) = delete;

  bool pinned() const { return base_ != nullptr; }
  const std::string& why() const { return why_; }

 private:
  void* base_ = nullptr;
  std::string why_;
};

// A point in the work queued so far on a device's current stream, for a
// process that lends memory the queued work still reads. On the CPU (or a
// CPU build) every point is already passed.
class StreamPoint {
 public:
  explicit StreamPoint(const c10::Device& device);
  ~StreamPoint();
  StreamPoint(StreamPoint&& other) noexcept;
  StreamPoint& operator=(StreamPoint&& other) noexcept;
  StreamPoint(const StreamPoint&) = delete;

  // Whether the device has done all work queued before this point.
  bool passed() const;
  // Blocks until it has, asleep rather than spinning.
  void wait() const;
  // Work queued later on `device`'s current stream waits for this point.
  void order_current_stream_after(const c10::Device& device) const;

 private:
  void* event_ = nullptr;
};

// A CUDA stream of its own on a device, for copies that should not queue
// behind the training work on the device's current stream. On the CPU the
// copies simply run.
class CopyStream {
 public:
  explicit CopyStream(const c10::Device& device);
  ~CopyStream();
  CopyStream(const CopyStream&) = delete;
  CopyStream& operator=(const CopyStream&) = delete;

  // Runs `enqueue` with this stream current (tensors it allocates belong to
  // it). The current stream's later work waits for what it queued, and the
  // tensors it returns are kept from reuse until the current stream is done
  // with them. Returns the point just after the copies on this stream.
  StreamPoint run(const std::function<std::vector<at::Tensor>()>& enqueue);

 private:
  struct Impl;
  c10::Device device_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace colo::gpu
