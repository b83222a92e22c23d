#include "colo/gpu/energy.h"

#include <gtest/gtest.h>

namespace colo::gpu {
namespace {

DeviceSample at(double t, double power, std::optional<double> energy) {
  DeviceSample s;
  s.time_s = t;
  s.power_w = power;
  s.energy_j = energy;
  return s;
}

TEST(Energy, UsesTheCounterWhenBothEndsHaveIt) {
  std::vector<DeviceSample> samples{at(0, 100, 1000), at(1, 300, 1150), at(2, 300, 1500)};
  auto reading = energy_between(samples, 0, 2);
  EXPECT_TRUE(reading.from_counter);
  EXPECT_DOUBLE_EQ(reading.energy_j, 500);
}

TEST(Energy, IntegratesPowerWhenTheCounterIsMissing) {
  std::vector<DeviceSample> samples{at(0, 100, std::nullopt), at(1, 300, std::nullopt), at(3, 300, std::nullopt)};
  auto reading = energy_between(samples, 0, 3);
  EXPECT_FALSE(reading.from_counter);
  EXPECT_DOUBLE_EQ(reading.energy_j, 200 + 600);  // trapezoids: (100+300)/2*1 + 300*2
}

TEST(Energy, CounterReadOnlySometimesIsCompletedWithPowerAtTheEdges) {
  // Counter at t=1 and t=3 only (200 J between); 100 W before and after.
  std::vector<DeviceSample> samples{at(0, 100, std::nullopt), at(1, 100, 500), at(2, 100, std::nullopt),
                                    at(3, 100, 700), at(4, 100, std::nullopt)};
  auto reading = energy_between(samples, 0, 4);
  EXPECT_TRUE(reading.from_counter);
  EXPECT_DOUBLE_EQ(reading.energy_j, 100 + 200 + 100);
}

TEST(Energy, OnlySamplesInsideTheWindowCount) {
  std::vector<DeviceSample> samples{at(0, 100, 0), at(1, 100, 100), at(2, 100, 200), at(3, 100, 300)};
  EXPECT_DOUBLE_EQ(energy_between(samples, 0.5, 2.5).energy_j, 100);
  EXPECT_DOUBLE_EQ(energy_between(samples, 0.5, 1.5).energy_j, 0) << "one sample is not an interval";
}

}  // namespace
}  // namespace colo::gpu
