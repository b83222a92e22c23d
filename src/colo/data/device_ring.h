#pragma once
// A shared loader's ring on a GPU (CUDA IPC): the producer copies each chunk
// to the device once (DeviceRingMirror) and every consumer on that host
// copies its batches from there device to device (DeviceRingReader), with
// no host-to-device copy of its own. Needs a CUDA build; on others both
// constructors throw std::runtime_error saying so.

#include <cstdint>
#include <memory>
#include <utility>

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
  void copy_slot(int64_t slot, const uint8_t* data, int64_t bytes) override;
  nlohmann::json describe() const override;

 private:
  c10::Device device_;
  int64_t slot_bytes_;
  gpu::SharedDeviceBuffer buffer_;
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

  // The next batch, pixels (uint8 [B, C, H, W]) and labels (int64 [B]) on
  // the reader's device: copied on a stream of the reader's own, so the
  // copies need not wait for the training work already queued. Returns once
  // they are made (the thread sleeps if CUDA waits block) and hands their
  // chunks back to the producer. Throws as SharedLoaderClient::next_batch
  // does.
  std::pair<at::Tensor, at::Tensor> next();

 private:
  SharedLoaderClient& client_;
  c10::Device device_;
  at::Tensor ring_;  // uint8, the whole device ring
  int64_t slot_bytes_;
  gpu::CopyStream copies_;
};

}  // namespace colo::data
