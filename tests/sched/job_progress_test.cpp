#include "colo/sched/job_progress.h"

#include <gtest/gtest.h>

namespace colo::sched {
namespace {

TEST(JobProgress, ThroughputOverallAndAloneFromTheReadings) {
  JobProgress progress;
  progress.observe({0, 0}, false);
  EXPECT_FALSE(progress.samples_per_s());
  progress.observe({1000, 1}, true);   // 1000/s alone
  progress.observe({2000, 2}, true);   // 1000/s alone
  progress.observe({2500, 3}, false);  // 500/s shared
  progress.observe({3000, 4}, false);
  EXPECT_DOUBLE_EQ(*progress.samples_per_s(), 750);
  EXPECT_DOUBLE_EQ(*progress.alone_samples_per_s(), 1000);
  EXPECT_DOUBLE_EQ(*slowdown(progress.alone_samples_per_s(), progress.samples_per_s()), 1000.0 / 750);
}

TEST(JobProgress, DataWaitIsAShareOfTheTrainingTimeAtTheLastReading) {
  JobProgress progress;
  EXPECT_FALSE(progress.data_wait_pct());
  progress.observe({100, 1.0}, false);
  EXPECT_FALSE(progress.data_wait_pct()) << "the job does not say";
  ProgressReading waited{400, 4.0};
  waited.data_wait_s = 1.0;
  progress.observe(waited, false);
  EXPECT_DOUBLE_EQ(*progress.data_wait_pct(), 25.0);
}

TEST(JobProgress, TooLittleTimeAloneGivesNoAloneFigure) {
  JobProgress progress;
  progress.observe({0, 0}, false);
  progress.observe({500, 1}, false);
  progress.observe({1500, JobProgress::kMinAloneS - 0.5}, true);
  EXPECT_FALSE(progress.alone_samples_per_s());
  EXPECT_TRUE(progress.samples_per_s());
}

TEST(JobProgress, AShortJobAloneThroughoutHasItsWholeRunAsItsAloneFigure) {
  JobProgress progress;
  progress.observe({0, 0}, true);
  progress.observe({900, 0.5}, true);
  progress.observe({2000, 1}, true);
  EXPECT_DOUBLE_EQ(*progress.alone_samples_per_s(), 2000);
}

TEST(JobProgress, AReadingThatGoesBackwardsStartsAfresh) {
  JobProgress progress;
  progress.observe({0, 0}, true);
  progress.observe({5000, 5}, true);
  progress.observe({100, 1}, true);  // the job restarted
  EXPECT_DOUBLE_EQ(*progress.samples_per_s(), 100) << "the restarted run's counts alone, not 5000's";
  progress.observe({300, 2}, true);
  EXPECT_DOUBLE_EQ(*progress.samples_per_s(), 200);
}

TEST(JobProgress, AJobReadOnceHasItsWholeRunsThroughput) {
  // A short job that ended between two scheduler rounds: one reading.
  JobProgress progress;
  progress.observe({1024, 0.5}, false);
  EXPECT_DOUBLE_EQ(*progress.samples_per_s(), 2048);
}

TEST(JobProgress, RecentThroughputCoversTheLastWindow) {
  JobProgress progress;
  progress.observe({0, 0}, true);
  progress.observe({1000, 1}, true);
  EXPECT_FALSE(progress.recent_samples_per_s(2.0));  // readings span 1 s
  progress.observe({2000, 2}, true);
  progress.observe({2500, 3}, true);
  progress.observe({3000, 4}, true);
  EXPECT_DOUBLE_EQ(*progress.recent_samples_per_s(2.0), 500);   // 2000 -> 3000 over 2 s
  EXPECT_DOUBLE_EQ(*progress.recent_samples_per_s(4.0), 750);
}

TEST(JobProgress, SlowdownNeedsBothFigures) {
  EXPECT_FALSE(slowdown(std::nullopt, 10.0));
  EXPECT_FALSE(slowdown(10.0, std::nullopt));
  EXPECT_FALSE(slowdown(10.0, 0.0));
  EXPECT_DOUBLE_EQ(*slowdown(10.0, 5.0), 2.0);
}

}  // namespace
}  // namespace colo::sched
