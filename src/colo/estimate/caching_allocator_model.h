#pragma once
// A model of PyTorch's CUDA caching allocator (default settings): how much
// memory it reserves from the driver for a sequence of allocations and frees.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace colo::estimate {

// Rounds requests to 512 bytes; serves requests up to 1 MiB from 2 MiB
// segments, larger ones from 20 MiB segments (under 10 MiB) or from segments
// of their own size rounded to 2 MiB; picks the smallest cached block that
// fits, splits it when the rest is worth keeping, merges neighbours on free,
// and never returns a segment (no empty_cache). Among cached blocks of one
// size it takes the newest segment's first: PyTorch takes the lowest
// address, and the driver gives each new segment an address below the last
// (H100 traces, bench/results/estimate/allocator_traces). That is a guess
// where the driver packs segments upwards: given the addresses the driver
// really gave (a GPU's trace), the same rules reserve what the GPU did on
// every row traced from the model's .cuda() on (session 22).
class CachingAllocatorModel {
 public:
  // Allocates `bytes` (> 0) under the caller's `id`, unique among live blocks.
  // `segment_address`: where the driver put the segment this allocation
  // makes, if it makes one (a trace's segment_alloc); the blocks of segments
  // given one are then ordered by address (give every segment one, or none).
  void allocate(int64_t id, int64_t bytes, std::optional<int64_t> segment_address = std::nullopt);
  // Frees the block of `id`; an unknown id is ignored.
  void free(int64_t id);

  int64_t allocated() const { return allocated_; }
  int64_t reserved() const { return reserved_; }
  int64_t peak_allocated() const { return peak_allocated_; }
  int64_t peak_reserved() const { return peak_reserved_; }

  static int64_t rounded_size(int64_t bytes);

 private:
  struct Block {
    int64_t size = 0;
    bool free = true;
  };
  struct Segment {
    bool small = false;
    int64_t order = 0;                // ties among equal free blocks: -index, or the driver's address
    std::map<int64_t, Block> blocks;  // by offset
  };
  using FreeKey = std::tuple<int64_t, int64_t, int64_t, int>;  // size, segment order, offset, segment

  void insert_free(int segment, int64_t offset);
  void erase_free(int segment, int64_t offset);

  std::vector<Segment> segments_;
  std::set<FreeKey> free_small_, free_large_;
  std::unordered_map<int64_t, std::pair<int, int64_t>> live_;  // id -> segment, offset
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
};

}  // namespace colo::estimate
