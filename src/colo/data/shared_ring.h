#pragma once
// The memory a shared loader publishes batches in: a ring of equal slots in
// one anonymous memory file (memfd). Consumers of the same user map it
// through /proc/<producer pid>/fd/<fd>. The kernel frees it when the last
// process holding it ends, kill -9 included, so no segment outlives its
// users (unlike a named /dev/shm segment).

#include <cstdint>
#include <string>

namespace colo::data {

class SharedRing {
 public:
  // Producer side: a fresh zeroed ring, its pages already in memory (not
  // faulted in by the first writes). Throws std::runtime_error when the
  // memory cannot be had.
  static SharedRing create(int64_t slots, int64_t slot_bytes);
  // Consumer side: maps the ring the producer named `path` (read-only).
  // Throws std::runtime_error naming `path` when it cannot.
  static SharedRing open(const std::string& path, int64_t slots, int64_t slot_bytes);

  SharedRing(SharedRing&& other) noexcept;
  SharedRing& operator=(SharedRing&& other) noexcept;
  SharedRing(const SharedRing&) = delete;
  ~SharedRing();

  uint8_t* slot(int64_t index) const { return base_ + index * slot_bytes_; }
  int64_t slots() const { return slots_; }
  int64_t slot_bytes() const { return slot_bytes_; }
  // Where consumers open it.
  const std::string& path() const { return path_; }

 private:
  SharedRing() = default;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  int64_t slots_ = 0;
  int64_t slot_bytes_ = 0;
  std::string path_;
};

}  // namespace colo::data
