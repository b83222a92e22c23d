#include "colo/data/device_ring.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <ATen/ATen.h>

#include "colo/core/this_thread.h"
#include "colo/data/image_pipeline.h"
#include "colo/data/loader_protocol.h"
#include "colo/gpu/torch_device.h"

namespace colo::data {
namespace {

// `device` with its index filled in ("cuda" is the current CUDA device), as
// the tensors made on it report it.
c10::Device with_index(const c10::Device& device) {
  if (!gpu::shared_device_memory_available()) {
    throw std::runtime_error("a device ring needs a CUDA build of colo (this one has none)");
  }
  if (device.has_index()) return device;
  return at::empty({0}, at::TensorOptions().device(device)).device();
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string from_hex(const std::string& hex) {
  if (hex.size() % 2 != 0) throw std::runtime_error("shared loader: a device ring handle of odd length");
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error("shared loader: a device ring handle that is not hexadecimal");
  };
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) out.push_back(static_cast<char>(value(hex[i]) * 16 + value(hex[i + 1])));
  return out;
}

}  // namespace

DeviceRingMirror::DeviceRingMirror(int64_t slots, int64_t slot_bytes, const std::string& device)
    : device_(with_index(c10::Device(device))),
      slot_bytes_(slot_bytes),
      buffer_(slots * slot_bytes, device_, at::kByte),
      copies_(device_) {
  // The producer waits for each chunk's copy: asleep, not on a core its
  // decoders need.
  gpu::sleep_while_waiting(device_);
}

void DeviceRingMirror::attach_host_ring(uint8_t* base, int64_t bytes) {
  pinned_ = std::make_unique<gpu::PinnedHostMemory>(base, bytes);
  if (!pinned_->pinned()) {
    std::fprintf(stderr, "colo loader: the host ring cannot be pinned (%s); copies to %s are staged by the CPU\n",
                 pinned_->why().c_str(), device_.str().c_str());
  }
}

void DeviceRingMirror::start_copy(int64_t slot, const uint8_t* data, int64_t bytes) {
  started_.push_back(copies_.run([&] {
    at::Tensor host = at::from_blob(const_cast<uint8_t*>(data), {bytes}, at::TensorOptions().dtype(at::kByte));
    buffer_.tensor().narrow(0, slot * slot_bytes_, bytes).copy_(host, /*non_blocking=*/true);
    return std::vector<at::Tensor>{};
  }));
}

void DeviceRingMirror::wait_copies() {
  for (const gpu::StreamPoint& point : started_) point.wait();
  started_.clear();
}

nlohmann::json DeviceRingMirror::describe() const {
  return {{"handle", to_hex(buffer_.handle())}, {"device", device_.str()}, {"bytes", buffer_.tensor().numel()},
          {"slot_bytes", slot_bytes_}};
}

std::string DeviceRingMirror::fault() const { return gpu::fatal_device_error(device_); }

std::unique_ptr<RingMirror> make_ring_mirror(const LoaderServeSpec& spec) {
  if (spec.device.empty()) return nullptr;
  return std::make_unique<DeviceRingMirror>(spec.buffer, loader_slot_bytes(spec.chunk, sample_bytes(spec.pipeline)),
                                            spec.device);
}

DeviceRingReader::DeviceRingReader(SharedLoaderClient& client, const c10::Device& device)
    : client_(client),
      device_(with_index(device)),
      slot_bytes_(client.slot_bytes()),
      copies_(device_),
      hand_back_late_(2 * client.chunks_per_batch() < client.slots()) {
  const nlohmann::json& ring = client.device_ring();
  if (!ring.is_object()) throw std::runtime_error("shared loader: the producer keeps no device ring (set `device`)");
  if (ring.value("slot_bytes", int64_t{0}) != slot_bytes_) {
    throw std::runtime_error("shared loader: the producer's device ring and host ring differ in slot size");
  }
  if (client.chunks_per_batch() >= client.slots()) {
    throw std::runtime_error("the producer's ring of " + std::to_string(client.slots()) +
                             " chunks cannot hold the " + std::to_string(client.chunks_per_batch()) +
                             " a batch of " + std::to_string(client.batch_size()) +
                             " may span, and one more (raise `buffer` in the data file)");
  }
  ring_ = gpu::map_shared_device_buffer(from_hex(ring.value("handle", "")), ring.value("bytes", int64_t{0}), device_,
                                        at::kByte);
  releaser_ = std::thread([this] { release_copied(); });
}

DeviceRingReader::~DeviceRingReader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  releaser_.join();  // after the copies still running
}

void DeviceRingReader::release_copied() {
  name_this_thread("colo-release");
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !copying_.empty(); });
    if (copying_.empty()) return;  // stopping, nothing left to wait for
    // Only this thread removes: the front stays put while the main thread adds.
    const auto& [point, chunk] = copying_.front();
    lock.unlock();
    try {
      point.wait();
      client_.release_soon(chunk);
    } catch (const std::exception& e) {  // a device gone: the main thread's next call says so
      std::fprintf(stderr, "colo: waiting for copies from the shared loader's device ring: %s\n", e.what());
    }
    lock.lock();
    copying_.pop_front();
    changed_.notify_all();
  }
}

std::pair<at::Tensor, at::Tensor> DeviceRingReader::next() {
  {
    // Never more than one batch still copying (none with a small ring: its
    // chunks must be back before this batch asks for more).
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return copying_.size() <= (hand_back_late_ ? 1u : 0u); });
  }
  const int64_t batch = client_.batch_size(), sample = client_.sample_bytes();
  std::vector<RingPiece> pieces = client_.next_batch_pieces(nullptr);
  std::vector<int64_t> dims{batch};
  for (int64_t d : client_.sample_shape()) dims.push_back(d);
  at::Tensor pixels, labels;
  auto* base = ring_.data_ptr<uint8_t>();
  gpu::StreamPoint copied = copies_.run([&] {
    pixels = at::empty(dims, at::TensorOptions().dtype(at::kByte).device(device_));
    labels = at::empty({batch}, at::TensorOptions().dtype(at::kLong).device(device_));
    at::Tensor flat = pixels.view({-1});
    int64_t filled = 0;
    for (const RingPiece& p : pieces) {
      const int64_t slot = p.slot * slot_bytes_;
      flat.narrow(0, filled * sample, p.count * sample)
          .copy_(ring_.narrow(0, slot + client_.pixels_offset() + p.first * sample, p.count * sample), true);
      at::Tensor ring_labels =
          at::from_blob(base + slot + static_cast<int64_t>(sizeof(int64_t)) * (1 + p.first), {p.count},
                        at::TensorOptions().dtype(at::kLong).device(device_));
      labels.narrow(0, filled, p.count).copy_(ring_labels, true);
      filled += p.count;
    }
    return std::vector<at::Tensor>{pixels, labels};
  });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    copying_.emplace_back(std::move(copied), client_.current_chunk());
  }
  changed_.notify_all();
  return {pixels, labels};
}

}  // namespace colo::data
