#include "colo/sched/throughput_watch.h"

#include <gtest/gtest.h>

namespace colo::sched {
namespace {

TEST(ThroughputWatch, ClosesWhenTheNewcomerAddsTooLittle) {
  ThroughputWatch watch(0.05, 20);
  EXPECT_TRUE(watch.joined(0, 2, {{1, 1.0}}, 0));
  EXPECT_TRUE(watch.check(0, {{1, 0.6}, {2, std::nullopt}}, 1).empty());  // the newcomer's figure is not in yet
  EXPECT_EQ(watch.watching(), 1u);
  auto ended = watch.check(0, {{1, 0.6}, {2, 0.42}}, 2);  // 1.02 < 1.0 * 1.05
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].id, 2);
  ASSERT_TRUE(ended[0].stopped_growing);
  EXPECT_NE(ended[0].stopped_growing->find("with job 2 its jobs train 1.02 of their speed alone, 1.00 before"),
            std::string::npos) << *ended[0].stopped_growing;
  EXPECT_EQ(watch.watching(), 0u);
}

TEST(ThroughputWatch, StaysOpenWhenTheSumGrows) {
  ThroughputWatch watch(0.05, 20);
  watch.joined(0, 2, {{1, 0.9}}, 0);
  auto ended = watch.check(0, {{1, 0.7}, {2, 0.6}}, 1);  // 1.3 > 0.945
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].stopped_growing);
}

TEST(ThroughputWatch, DropsAJoinWhenAJobLeavesOrTimeRunsOutAndNeverWatchesWhatItCannotCompare) {
  ThroughputWatch watch(0.05, 20);
  EXPECT_FALSE(watch.joined(0, 2, {{1, std::nullopt}}, 0));  // no figure before
  EXPECT_FALSE(watch.joined(0, 3, {}, 0));                    // an empty GPU
  EXPECT_EQ(watch.watching(), 0u);
  watch.joined(1, 5, {{4, 1.0}}, 0);
  EXPECT_TRUE(watch.check(0, {{9, 0.1}}, 1).empty());  // another GPU: untouched
  auto left = watch.check(1, {{5, 0.2}}, 1);            // job 4 left: no verdict
  ASSERT_EQ(left.size(), 1u);
  EXPECT_FALSE(left[0].stopped_growing);
  watch.joined(1, 7, {{6, 1.0}}, 10);
  EXPECT_TRUE(watch.check(1, {{6, 1.0}, {7, std::nullopt}}, 29).empty());
  auto late = watch.check(1, {{6, 1.0}, {7, std::nullopt}}, 30.5);  // it never reported
  ASSERT_EQ(late.size(), 1u);
  EXPECT_FALSE(late[0].stopped_growing);
  EXPECT_EQ(watch.watching(), 0u);
}

}  // namespace
}  // namespace colo::sched
