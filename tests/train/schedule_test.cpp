#include "colo/train/schedule.h"

#include <gtest/gtest.h>

namespace colo::train {
namespace {

TEST(Schedule, ConstantStaysAtTheBaseRate) {
  LearningRateSchedule s(ScheduleSpec{}, 0.1, 100, 1000);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(999), 0.1);
}

TEST(Schedule, WarmupRampsLinearlyToTheBaseRate) {
  ScheduleSpec spec;
  spec.warmup_epochs = 0.5;  // 50 steps of 100 per epoch
  LearningRateSchedule s(spec, 0.2, 100, 1000);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.2 / 50);
  EXPECT_DOUBLE_EQ(s.lr_at(24), 0.2 * 25 / 50);
  EXPECT_DOUBLE_EQ(s.lr_at(49), 0.2);
  EXPECT_DOUBLE_EQ(s.lr_at(50), 0.2);
}

TEST(Schedule, StepDecaysByGammaEveryPeriod) {
  ScheduleSpec spec;
  spec.name = "step";
  spec.step_epochs = 2;
  spec.gamma = 0.5;
  LearningRateSchedule s(spec, 1.0, 10, 100);
  EXPECT_DOUBLE_EQ(s.lr_at(19), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(20), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(45), 0.25);
}

TEST(Schedule, CosineGoesFromBaseToMinimumOverTheRun) {
  ScheduleSpec spec;
  spec.name = "cosine";
  spec.min_lr = 0.01;
  LearningRateSchedule s(spec, 0.11, 10, 100);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.11);
  EXPECT_NEAR(s.lr_at(50), 0.06, 1e-12);  // halfway: mean of base and minimum
  EXPECT_NEAR(s.lr_at(100), 0.01, 1e-12);
  EXPECT_GT(s.lr_at(30), s.lr_at(31));
}

TEST(Schedule, CosineStartsAfterWarmup) {
  ScheduleSpec spec;
  spec.name = "cosine";
  spec.warmup_epochs = 1;
  LearningRateSchedule s(spec, 1.0, 10, 110);
  EXPECT_DOUBLE_EQ(s.lr_at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(10), 1.0);
  EXPECT_NEAR(s.lr_at(60), 0.5, 1e-12);
}

}  // namespace
}  // namespace colo::train
