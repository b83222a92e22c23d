#include "colo/estimate/caching_allocator_model.h"

#include <optional>

#include <gtest/gtest.h>

namespace colo::estimate {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(CachingAllocatorModel, RoundsRequestsTo512Bytes) {
  EXPECT_EQ(CachingAllocatorModel::rounded_size(1), 512);
  EXPECT_EQ(CachingAllocatorModel::rounded_size(512), 512);
  EXPECT_EQ(CachingAllocatorModel::rounded_size(513), 1024);
}

TEST(CachingAllocatorModel, ReservesSegmentsBySizeClass) {
  CachingAllocatorModel small;
  small.allocate(1, 1000);
  EXPECT_EQ(small.reserved(), 2 * kMiB);  // small pool segment
  small.allocate(2, 1000);
  EXPECT_EQ(small.reserved(), 2 * kMiB) << "the second small block is cut from the same segment";
  EXPECT_EQ(small.allocated(), 2048);

  CachingAllocatorModel medium;
  medium.allocate(1, 5 * kMiB);
  EXPECT_EQ(medium.reserved(), 20 * kMiB);
  medium.allocate(2, 5 * kMiB);
  EXPECT_EQ(medium.reserved(), 20 * kMiB);

  CachingAllocatorModel large;
  large.allocate(1, 11 * kMiB + 1);
  EXPECT_EQ(large.reserved(), 12 * kMiB);  // rounded to 2 MiB
}

TEST(CachingAllocatorModel, ReusesAndMergesFreedBlocks) {
  CachingAllocatorModel a;
  a.allocate(1, 30 * kMiB);
  a.allocate(2, 30 * kMiB);
  a.free(1);
  a.free(2);
  EXPECT_EQ(a.allocated(), 0);
  a.allocate(3, 20 * kMiB);
  EXPECT_EQ(a.reserved(), 60 * kMiB) << "a freed block is reused";
  // Two adjacent free blocks of one segment merge; separate segments do not.
  a.free(3);
  a.allocate(4, 50 * kMiB);
  EXPECT_EQ(a.reserved(), 110 * kMiB);
  EXPECT_EQ(a.peak_reserved(), 110 * kMiB);
  EXPECT_EQ(a.peak_allocated(), 60 * kMiB);
}

TEST(CachingAllocatorModel, MergesNeighboursWithinASegment) {
  CachingAllocatorModel a;
  a.allocate(1, 4 * kMiB);  // one 20 MiB segment holds 1, 2 and the rest
  a.allocate(2, 4 * kMiB);
  a.free(1);
  a.free(2);
  a.allocate(3, 18 * kMiB);
  EXPECT_EQ(a.reserved(), 20 * kMiB) << "the whole segment is one free block again";
}

TEST(CachingAllocatorModel, AmongEqualFreeBlocksTheNewestSegmentsIsTakenFirst) {
  // Two 40 MiB segments, the older holding [p][free 20], the newer [free 20][s].
  CachingAllocatorModel a;
  a.allocate(1, 40 * kMiB);  // segment 0
  a.allocate(2, 40 * kMiB);  // segment 1
  a.free(2);
  a.allocate(3, 20 * kMiB);  // r, in segment 1
  a.allocate(4, 20 * kMiB);  // s, after it
  a.free(1);
  a.allocate(5, 20 * kMiB);  // p, in segment 0
  a.free(3);
  // c takes segment 1's free block (the lowest address on a GPU), so freeing
  // p leaves segment 0 whole for a 40 MiB tensor. Taking segment 0's block
  // instead would have needed a third segment (120 MiB).
  a.allocate(6, 20 * kMiB);
  a.free(5);
  a.allocate(7, 40 * kMiB);
  EXPECT_EQ(a.reserved(), 80 * kMiB);
}

// Two cached 12 MiB blocks: one a segment of its own (made first), one the
// rest of a 20 MiB segment beside a live 8 MiB block. Whichever a 12 MiB
// request takes decides whether freeing the 8 MiB block leaves a whole 20
// MiB segment for the next 20 MiB request. Without addresses the newest
// segment's block goes first; given the driver's, the lowest address does.
int64_t reserved_after_tie(std::optional<int64_t> first_segment, std::optional<int64_t> second_segment) {
  CachingAllocatorModel a;
  a.allocate(1, 12 * kMiB, first_segment);   // its own 12 MiB segment
  a.allocate(2, 8 * kMiB, second_segment);   // a 20 MiB segment, 12 MiB of it left
  a.free(1);
  a.allocate(3, 12 * kMiB);                  // the tie
  a.free(2);
  a.allocate(4, 20 * kMiB);
  return a.reserved();
}

TEST(CachingAllocatorModel, AmongEqualCachedBlocksTakesTheNewestSegmentsOrTheLowestAddressGiven) {
  EXPECT_EQ(reserved_after_tie(std::nullopt, std::nullopt), 52 * kMiB);  // newest: the 20 MiB segment's
  EXPECT_EQ(reserved_after_tie(0x100000000, 0x200000000), 32 * kMiB);    // the first segment lies lower
  EXPECT_EQ(reserved_after_tie(0x200000000, 0x100000000), 52 * kMiB);
}

}  // namespace
}  // namespace colo::estimate
