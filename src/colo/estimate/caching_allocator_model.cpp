#include "colo/estimate/caching_allocator_model.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace colo::estimate {
namespace {

constexpr int64_t kMinBlock = 512;
constexpr int64_t kSmallSize = 1 << 20;          // requests up to this come from the small pool
constexpr int64_t kSmallSegment = 2 << 20;
constexpr int64_t kLargeSegment = 20 << 20;      // for requests under kMinLargeAlloc
constexpr int64_t kMinLargeAlloc = 10 << 20;
constexpr int64_t kRoundLarge = 2 << 20;

int64_t round_up(int64_t value, int64_t unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

int64_t CachingAllocatorModel::rounded_size(int64_t bytes) {
  return bytes < kMinBlock ? kMinBlock : round_up(bytes, kMinBlock);
}

void CachingAllocatorModel::insert_free(int segment, int64_t offset) {
  const Segment& seg = segments_[segment];
  auto& pool = seg.small ? free_small_ : free_large_;
  pool.insert({seg.blocks.at(offset).size, seg.order, offset, segment});
}

void CachingAllocatorModel::erase_free(int segment, int64_t offset) {
  const Segment& seg = segments_[segment];
  auto& pool = seg.small ? free_small_ : free_large_;
  pool.erase({seg.blocks.at(offset).size, seg.order, offset, segment});
}

void CachingAllocatorModel::allocate(int64_t id, int64_t bytes, std::optional<int64_t> segment_address) {
  if (bytes <= 0) throw std::invalid_argument("allocation of " + std::to_string(bytes) + " bytes");
  int64_t size = rounded_size(bytes);
  bool small = size <= kSmallSize;
  auto& pool = small ? free_small_ : free_large_;
  auto it = pool.lower_bound({size, std::numeric_limits<int64_t>::min(), -1, -1});
  int segment;
  int64_t offset;
  if (it == pool.end()) {
    int64_t segment_size = small ? kSmallSegment
                                 : (size < kMinLargeAlloc ? kLargeSegment : round_up(size, kRoundLarge));
    segment = static_cast<int>(segments_.size());
    segments_.push_back(Segment{small, segment_address.value_or(-segment), {{0, Block{segment_size, true}}}});
    offset = 0;
    reserved_ += segment_size;
  } else {
    segment = std::get<3>(*it);
    offset = std::get<2>(*it);
    pool.erase(it);
  }
  Segment& seg = segments_[segment];
  Block& block = seg.blocks.at(offset);
  int64_t rest = block.size - size;
  bool split = small ? rest >= kMinBlock : rest > kSmallSize;
  if (split) {
    block.size = size;
    seg.blocks[offset + size] = Block{rest, true};
    insert_free(segment, offset + size);
  }
  Block& used = seg.blocks.at(offset);
  used.free = false;
  allocated_ += used.size;
  live_[id] = {segment, offset};
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

void CachingAllocatorModel::free(int64_t id) {
  auto found = live_.find(id);
  if (found == live_.end()) return;
  auto [segment, offset] = found->second;
  live_.erase(found);
  Segment& seg = segments_[segment];
  auto it = seg.blocks.find(offset);
  allocated_ -= it->second.size;
  it->second.free = true;
  if (auto next = std::next(it); next != seg.blocks.end() && next->second.free) {
    erase_free(segment, next->first);
    it->second.size += next->second.size;
    seg.blocks.erase(next);
  }
  if (it != seg.blocks.begin()) {
    auto prev = std::prev(it);
    if (prev->second.free) {
      erase_free(segment, prev->first);
      prev->second.size += it->second.size;
      seg.blocks.erase(it);
      it = prev;
    }
  }
  insert_free(segment, it->first);
}

}  // namespace colo::estimate
