#include "colo/gpu/simulated_device.h"

#include <chrono>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace colo::gpu {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(SimulatedDevice, MemoryOfPlacedJobsAddsUp) {
  SimulatedDevice gpu(0, SimulatedGpuSpec{});
  EXPECT_TRUE(gpu.place(1, {101, 30 * kGiB, 0.2}));
  EXPECT_TRUE(gpu.place(2, {102, 40 * kGiB, 0.2}));
  DeviceSample s = gpu.sample();
  EXPECT_EQ(s.mem_used_bytes, 70 * kGiB);
  EXPECT_EQ(s.mem_free_bytes, 10 * kGiB);
  EXPECT_EQ(gpu.processes().size(), 2u);
  gpu.remove(1);
  EXPECT_EQ(gpu.sample().mem_used_bytes, 40 * kGiB);
}

TEST(SimulatedDevice, JobThatDoesNotFitIsRefusedAsOutOfMemory) {
  SimulatedDevice gpu(0, SimulatedGpuSpec{});
  EXPECT_TRUE(gpu.place(1, {1, 60 * kGiB, 0.5}));
  EXPECT_FALSE(gpu.place(2, {2, 30 * kGiB, 0.5}));
  EXPECT_EQ(gpu.mem_used_bytes(), 60 * kGiB) << "a refused job holds nothing";
}

TEST(SimulatedDevice, ActivityCombinesAndOversubscriptionSlowsEveryJob) {
  SimulatedDevice gpu(0, SimulatedGpuSpec{});
  gpu.place(1, {1, kGiB, 0.3});
  gpu.place(2, {2, kGiB, 0.4});
  EXPECT_DOUBLE_EQ(gpu.sm_activity(), 0.7);
  EXPECT_DOUBLE_EQ(gpu.progress_rate(), 1.0);
  gpu.place(3, {3, kGiB, 0.8});
  EXPECT_DOUBLE_EQ(gpu.sm_activity(), 1.0);
  EXPECT_DOUBLE_EQ(gpu.progress_rate(), 1.0 / 1.5);
}

TEST(SimulatedDevice, PowerFollowsActivityAndEnergyIntegratesIt) {
  SimulatedGpuSpec spec;
  spec.idle_power_w = 100;
  spec.busy_floor_power_w = 100;
  spec.max_power_w = 500;
  SimulatedDevice gpu(0, spec);
  gpu.advance(10);                  // idle: 100 W x 10 s
  gpu.place(1, {1, kGiB, 0.5});     // 300 W
  EXPECT_DOUBLE_EQ(gpu.power_w(), 300);
  gpu.advance(5);                   // 1500 J
  EXPECT_DOUBLE_EQ(gpu.energy_j(), 2500);
  EXPECT_DOUBLE_EQ(gpu.now_s(), 15);
  EXPECT_DOUBLE_EQ(*gpu.sample().energy_j, 2500);
}

TEST(SimulatedDevice, AJobsActivityChangesInPlaceWithEnergyCountedAtTheOldPowerUntilThen) {
  SimulatedGpuSpec spec;
  spec.idle_power_w = 100;
  spec.busy_floor_power_w = 100;
  spec.max_power_w = 500;
  SimulatedDevice gpu(0, spec);
  gpu.place(1, {1, 2 * kGiB, 0.0});  // starting up: the busy floor
  gpu.advance(10);                   // 1000 J
  gpu.set_activity(1, 0.5);          // training: 300 W
  gpu.set_activity(7, 0.9);          // not placed: nothing
  EXPECT_DOUBLE_EQ(gpu.sm_activity(), 0.5);
  EXPECT_EQ(gpu.mem_used_bytes(), 2 * kGiB);
  gpu.advance(5);                    // 1500 J
  EXPECT_DOUBLE_EQ(gpu.energy_j(), 2500);
}

TEST(SimulatedDevice, AJobLiftsPowerToTheBusyFloorEvenWhenItsSmActivityIsZero) {
  SimulatedGpuSpec spec;
  spec.idle_power_w = 70;
  spec.busy_floor_power_w = 120;
  spec.max_power_w = 520;
  SimulatedDevice gpu(0, spec);
  EXPECT_DOUBLE_EQ(gpu.power_w(), 70);
  gpu.place(1, {1, kGiB, 0.0});
  EXPECT_DOUBLE_EQ(gpu.power_w(), 120);
  gpu.place(2, {2, kGiB, 0.25});    // 120 + 400 x 0.25
  EXPECT_DOUBLE_EQ(gpu.power_w(), 220);
  gpu.remove(1);
  gpu.remove(2);
  EXPECT_DOUBLE_EQ(gpu.power_w(), 70);
}

TEST(SimulatedDevice, ADeviceOnTheWallClockAdvancesAndIntegratesPowerBetweenSamples) {
  SimulatedGpuSpec spec;
  spec.idle_power_w = 71;
  spec.busy_floor_power_w = 117;
  spec.max_power_w = 540;
  SimulatedDevice gpu(0, spec, SimulatedClock::kWallClock);
  DeviceSample first = gpu.sample();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  DeviceSample second = gpu.sample();
  EXPECT_GE(second.time_s - first.time_s, 0.025);
  EXPECT_GT(second.unix_s, first.unix_s);
  ASSERT_TRUE(first.energy_j && second.energy_j);
  EXPECT_GT(*second.energy_j, 0);
  EXPECT_NEAR(*second.energy_j - *first.energy_j, 71 * (second.time_s - first.time_s), 1e-6) << "idle power x time";
  // A job raises the power from when it is placed; its energy stays put when it leaves.
  gpu.place(1, {1, kGiB, 1.0});
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  gpu.remove(1);
  DeviceSample third = gpu.sample();
  const double dt = third.time_s - second.time_s;
  EXPECT_GT(*third.energy_j - *second.energy_j, 71 * dt + (540 - 71) * 0.025);
  EXPECT_LT(*third.energy_j - *second.energy_j, 540 * dt);
  EXPECT_LE(*third.energy_j, gpu.energy_j());
  EXPECT_THROW(gpu.advance(1), std::logic_error) << "the wall clock drives it";
}

TEST(SimulatedDevice, ADeviceTheSimulatorDrivesMovesOnlyWhenAdvanced) {
  SimulatedDevice gpu(0, SimulatedGpuSpec{});
  EXPECT_EQ(gpu.clock(), SimulatedClock::kAdvanced);
  DeviceSample first = gpu.sample();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  gpu.place(1, {1, kGiB, 0.5});
  DeviceSample second = gpu.sample();
  EXPECT_EQ(second.time_s, 0);
  EXPECT_EQ(second.unix_s, first.unix_s);
  EXPECT_EQ(*second.energy_j, 0);
  gpu.advance(2);
  EXPECT_DOUBLE_EQ(gpu.now_s(), 2);
  EXPECT_DOUBLE_EQ(gpu.energy_j(), 2 * gpu.power_w());
  EXPECT_DOUBLE_EQ(*gpu.sample().energy_j, 2 * gpu.power_w());
}

}  // namespace
}  // namespace colo::gpu
