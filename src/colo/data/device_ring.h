#pragma once
// A shared loader's ring on a GPU (CUDA IPC): the producer copies each chunk
// to the device once (DeviceRingMirror) and every consumer on that host
// copies its batches from there device to device (DeviceRingReader), with
// no host-to-device copy of its own. Needs a CUDA build; on others both
// constructors throw std::runtime_error saying so.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include "colo/data/loader_server.h"
#include "colo/data/shared_loader.h"
#include "colo/gpu/shared_device_memory.h"

namespace colo::data {

class DeviceRingMirror : public RingMirror {
 public:
  // `slots` slots of `slot_bytes` on `device` ("cuda" or "cuda:N").
  DeviceRingMirror(int64_t slots, int64_t slot_bytes, const std::string& device);
  void attach_host_ring(uint8_t* base, int64_t bytes) override;
  // Queued on a stream of the mirror's own: the copies of several chunks
  // run together in the producer's next time slice on the GPU.
  void start_copy(int64_t slot, const uint8_t* data, int64_t bytes) override;
  void wait_copies() override;
  nlohmann::json describe() const override;
  std::string fault() const override;

 private:
  c10::Device device_;
  int64_t slot_bytes_;
  gpu::SharedDeviceBuffer buffer_;
  gpu::CopyStream copies_;
  std::unique_ptr<gpu::PinnedHostMemory> pinned_;
  std::vector<gpu::StreamPoint> started_;
};

// The mirror `colo loader serve` keeps for `spec` (spec.device), or null
// when the spec names no device.
std::unique_ptr<RingMirror> make_ring_mirror(const LoaderServeSpec& spec);

class DeviceRingReader {
 public:
  // Maps `client`'s device ring onto `device`. Throws std::runtime_error
  // when the producer keeps none, or it cannot be mapped here (a CPU build,
  // another host). `client` must outlive the reader.
  DeviceRingReader(SharedLoaderClient& client, const c10::Device& device);
  DeviceRingReader(const DeviceRingReader&) = delete;
  DeviceRingReader& operator=(const DeviceRingReader&) = delete;

  // Waits for the copies still running from the ring before unmapping it.
  ~DeviceRingReader();

  // The next batch, pixels (uint8 [B, C, H, W]) and labels (int64 [B]) on
  // the reader's device: copied on a stream of the reader's own, so the
  // copies need not wait for the training work already queued; work queued
  // later on the current stream waits for them. Returns without waiting for
  // the copies: a thread of the reader's own waits for them (asleep) and
  // hands their chunks back to the producer as soon as they are done, so a
  // slow consumer holds the producer's slots no longer than its copies
  // take. When the ring is too small to hold two batches' chunks and one
  // more, the next call first waits until the last batch's are back.
  // Throws as SharedLoaderClient::next_batch does.
  std::pair<at::Tensor, at::Tensor> next();

 private:
  // The releasing thread's loop: waits for each batch's copies in turn,
  // then releases its chunks (SharedLoaderClient::release_soon).
  void release_copied();

  SharedLoaderClient& client_;
  c10::Device device_;
  at::Tensor ring_;  // uint8, the whole device ring
  int64_t slot_bytes_;
  gpu::CopyStream copies_;
  bool hand_back_late_;  // the ring holds two batches' chunks and one more
  // Batches still copying: the point after their copies, and the chunk
  // before which all may go back once it is passed. The main thread adds,
  // the releasing thread removes.
  std::deque<std::pair<gpu::StreamPoint, int64_t>> copying_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::thread releaser_;
};

}  // namespace colo::data
