#include "colo/sched/batch_totals.h"

#include <gtest/gtest.h>

namespace colo::sched {
namespace {

JobRecord finished(JobState state, std::optional<double> rate, std::optional<double> alone) {
  JobRecord r;
  r.state = state;
  r.submit_s = 0;
  r.start_s = 1;
  r.end_s = 3;
  r.samples_per_s = rate;
  r.alone_samples_per_s = alone;
  return r;
}

TEST(BatchTotals, SlowdownOverCompletedJobsThatHaveOne) {
  BatchTotals totals({finished(JobState::kCompleted, 500, 1000), finished(JobState::kCompleted, 800, 1000),
                      finished(JobState::kCompleted, 800, std::nullopt),   // no alone figure
                      finished(JobState::kFailed, 100, 1000)});            // not completed
  ASSERT_TRUE(totals.mean_slowdown);
  EXPECT_DOUBLE_EQ(*totals.mean_slowdown, (2.0 + 1.25) / 2);
  EXPECT_DOUBLE_EQ(*totals.max_slowdown, 2.0);
  auto json = totals.to_json("magm", "mps", 10);
  EXPECT_DOUBLE_EQ(json["mean_slowdown"].get<double>(), 1.625);
  EXPECT_EQ(totals.completed, 3);
}

TEST(BatchTotals, NoSlowdownKeysWithoutThroughput) {
  BatchTotals totals({finished(JobState::kCompleted, std::nullopt, std::nullopt)});
  EXPECT_FALSE(totals.mean_slowdown);
  EXPECT_FALSE(totals.to_json("magm", "mps", 10).contains("mean_slowdown"));
}

}  // namespace
}  // namespace colo::sched
