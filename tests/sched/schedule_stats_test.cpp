// What `colo report` says of a schedule: JCT, waits, sharing, slowdown.

#include "colo/sched/schedule_stats.h"

#include <gtest/gtest.h>

namespace colo::sched {
namespace {

ScheduledJob job(const std::string& name, int gpu, double submit, double start, double end) {
  return ScheduledJob{name, "COMPLETED", gpu, submit, start, end};
}

TEST(ScheduleStats, JctWaitsAndJobsPerGpuOfAHandMadeSchedule) {
  // GPU 0: a 0-10, b 5-15 (two at once over 5-10); GPU 1: c 0-4. d failed.
  std::vector<ScheduledJob> jobs{job("a", 0, 0, 0, 10), job("b", 0, 0, 5, 15), job("c", 1, 2, 2, 4)};
  jobs.push_back(ScheduledJob{"d", "FAILED", 1, 0, 4, 5});
  auto s = schedule_stats(jobs);
  EXPECT_EQ(s.completed, 3);
  EXPECT_DOUBLE_EQ(s.mean_jct_s, (10 + 15 + 2) / 3.0);
  EXPECT_DOUBLE_EQ(s.mean_wait_s, 5 / 3.0);
  EXPECT_DOUBLE_EQ(s.p95_wait_s, 5);
  EXPECT_EQ(s.max_jobs_per_gpu, 2);
  // GPU 0 busy 15 s with 20 job-seconds; GPU 1 busy 3 s (c, then d) with 3.
  EXPECT_DOUBLE_EQ(s.mean_jobs_per_gpu, 23.0 / 18.0);
  EXPECT_FALSE(s.mean_slowdown.has_value());
}

TEST(ScheduleStats, SlowdownAgainstARunWhereEachJobRanAlone) {
  std::vector<ScheduledJob> together{job("a", 0, 0, 0, 12), job("b", 0, 0, 0, 10), job("new", 0, 0, 0, 1)};
  std::vector<ScheduledJob> alone{job("a", 0, 0, 0, 8), job("b", 0, 0, 8, 18)};
  auto s = schedule_stats(together, &alone);
  ASSERT_EQ(s.slowdown.size(), 2u) << "a job the alone run lacks has no slowdown";
  EXPECT_DOUBLE_EQ(s.slowdown["a"], 1.5);
  EXPECT_DOUBLE_EQ(s.slowdown["b"], 1.0);
  EXPECT_DOUBLE_EQ(*s.mean_slowdown, 1.25);
  EXPECT_DOUBLE_EQ(*s.max_slowdown, 1.5);
}

TEST(ScheduleStats, JobsOverTimeStepsAtEachStartAndEnd) {
  std::vector<ScheduledJob> jobs{job("a", 0, 0, 0, 10), job("b", 0, 0, 5, 10), job("c", 0, 0, 10, 12)};
  auto steps = jobs_on_gpu_over_time(jobs, 0);
  std::vector<std::pair<double, int>> expected{{0, 1}, {5, 2}, {10, 1}, {12, 0}};
  EXPECT_EQ(steps, expected) << "at 10 two end and one starts: one step";
}

}  // namespace
}  // namespace colo::sched
