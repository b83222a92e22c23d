#include "colo/sched/mps_limit.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace colo::sched {
namespace {

using testing::kGiB;

TEST(MpsMemoryLimit, EstimatePlusMarginAndNoneWhenUnknownOrAlone) {
  Thresholds thresholds;
  thresholds.mem_margin_bytes = kGiB;
  JobRequest request;
  EXPECT_FALSE(mps_memory_limit(request, thresholds));  // size unknown
  request.mem_bytes = 2 * kGiB;
  EXPECT_EQ(mps_memory_limit(request, thresholds), 3 * kGiB);
  // Recovering under the peak + margin rule: the room it was placed for.
  request.min_free_bytes = 5 * kGiB;
  EXPECT_EQ(mps_memory_limit(request, thresholds), 5 * kGiB);
  // Recovering alone: the whole device is its.
  request.must_run_alone = true;
  EXPECT_FALSE(mps_memory_limit(request, thresholds));
}

TEST(MpsMemoryLimit, AnOomWithRoomLeftOnTheGpuIsAFalseOom) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  EXPECT_TRUE(is_false_oom(4 * kGiB, 40 * kGiB)) << "killed by its limit while the GPU had 40 GiB free";
  EXPECT_TRUE(is_false_oom(4 * kGiB, kGiB)) << "a quarter of the limit free";
  EXPECT_FALSE(is_false_oom(4 * kGiB, kGiB / 2)) << "the GPU was full: a true OOM";
}

}  // namespace
}  // namespace colo::sched
