// How colo compare times training apart from start-up (compare/progress.h).

#include "colo/compare/progress.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "colo/core/paths.h"
#include "support/temp_dir.h"

namespace colo::compare {
namespace {

TEST(TrainingWindow, LeavesEachProcessesWarmUpOutAndCountsTheUnionOfTheRest) {
  // Process a: writes at 10, 11, 12, 14 s; 10% of its 1000 samples is
  // reached at its second write. Process b starts later and overlaps a.
  std::vector<TimedProgress> a = {{10, 50}, {11, 100}, {12, 400}, {14, 1000}};
  std::vector<TimedProgress> b = {{13, 10}, {13.5, 20}, {15, 200}, {16, 500}};
  auto window = training_window({a, b});
  ASSERT_TRUE(window.has_value());
  // a: from 11 s (100) to 14 s (1000); b: its 2nd write (20) is under 10%
  // of 500, so from 15 s (200) to 16 s (500).
  EXPECT_EQ(window->samples, 900 + 300);
  ASSERT_EQ(window->intervals.size(), 2u);
  EXPECT_DOUBLE_EQ(window->intervals[0].first, 11);
  EXPECT_DOUBLE_EQ(window->intervals[0].second, 14);
  EXPECT_DOUBLE_EQ(window->intervals[1].first, 15);
  EXPECT_DOUBLE_EQ(window->seconds, 3 + 1);
}

TEST(TrainingWindow, OverlappingProcessesAreMeasuredWhileBothTrain) {
  // a is past its warm-up from 1 s to 5 s, b from 1 s to 6 s: both train
  // in [1, 5]. b's 30 samples of (3, 6] are spread evenly: 20 fall in it.
  std::vector<TimedProgress> a = {{0, 1}, {1, 10}, {2, 20}, {5, 50}};
  std::vector<TimedProgress> b = {{0, 1}, {1, 10}, {3, 30}, {6, 60}};
  auto window = training_window({a, b});
  ASSERT_TRUE(window.has_value());
  EXPECT_TRUE(window->full_occupancy);
  EXPECT_EQ(window->occupancy, 2u);
  ASSERT_EQ(window->intervals.size(), 1u);
  EXPECT_DOUBLE_EQ(window->intervals[0].first, 1);
  EXPECT_DOUBLE_EQ(window->intervals[0].second, 5);
  EXPECT_EQ(window->samples, 40 + 20 + 20);
}

// A process training `rate` samples/s from `start` s for `seconds`, writing
// every second.
std::vector<TimedProgress> steady_process(double start, double seconds, int64_t rate) {
  std::vector<TimedProgress> writes;
  for (int k = 0; k <= static_cast<int>(seconds); ++k) writes.push_back({start + k, rate * (k + 1)});
  return writes;
}

TEST(TrainingWindow, StaggeredProcessesAreMeasuredWhileAllTrainAtOnceNotOnTheirRamps) {
  // Three processes of 100 samples/s each, started 2 s apart: past their
  // warm-up (the 2nd write) from 1, 3 and 5 s to 10, 12 and 14 s. All
  // three train in [5, 10]: 300 samples/s. The union, [1, 14], would say
  // (900 + 900 + 900) / 13 = 208.
  auto window = training_window({steady_process(0, 10, 100), steady_process(2, 10, 100), steady_process(4, 10, 100)});
  ASSERT_TRUE(window.has_value());
  EXPECT_TRUE(window->full_occupancy);
  EXPECT_EQ(window->occupancy, 3u);
  EXPECT_DOUBLE_EQ(window->seconds, 5);
  EXPECT_EQ(window->samples, 1500);
}

TEST(TrainingWindow, WhileOneProcessEvaluatesTheOthersTrainingStillCounts) {
  // Both train 100 samples/s from 1 s to 10 s, but between its writes at 5
  // and 6 s, a trained only 0.5 s (it evaluated in [5, 5.5]). Both are past
  // their warm-up throughout, and b trained in [5, 5.5]: the window is
  // [1, 10] with every sample.
  std::vector<TimedProgress> a, b = steady_process(0, 10, 100);
  for (int k = 0; k <= 10; ++k) a.push_back({static_cast<double>(k), 100 * (k + 1), k < 6 ? k : k - 0.5});
  auto window = training_window({a, b});
  ASSERT_TRUE(window.has_value());
  EXPECT_TRUE(window->full_occupancy);
  ASSERT_EQ(window->intervals.size(), 1u);
  EXPECT_DOUBLE_EQ(window->seconds, 9);
  EXPECT_EQ(window->samples, 1800);
  // Alone, a's evaluation is left out of its time.
  auto alone = training_window({a});
  ASSERT_TRUE(alone.has_value());
  EXPECT_DOUBLE_EQ(alone->seconds, 8.5);
}

TEST(TrainingWindow, ABriefFullOccupancyFallsBackToTheUnion) {
  // a trains [1, 10]; b only overlaps it in [9.5, 10]: half a second, too
  // short to stand for the level, so the union [1, 11.5] does.
  std::vector<TimedProgress> a = {{0, 1}, {1, 10}, {2, 20}, {10, 100}};
  std::vector<TimedProgress> b = {{9, 1}, {9.5, 10}, {10, 20}, {11.5, 50}};
  auto window = training_window({a, b});
  ASSERT_TRUE(window.has_value());
  EXPECT_FALSE(window->full_occupancy);
  EXPECT_EQ(window->occupancy, 2u);
  EXPECT_DOUBLE_EQ(window->seconds, 10.5);
  EXPECT_EQ(window->samples, 90 + 40);
}

TEST(TrainingWindow, EvaluationBetweenEpochsIsLeftOutByTheWritersTrainingTime) {
  // 100 samples/s; the epoch ends at 2.5 s, evaluation takes 0.5 s, and
  // the next epoch's first write comes at 4 s after 1 s of training.
  std::vector<TimedProgress> p = {{0, 10, 0.1}, {1, 100, 1.0}, {2, 200, 2.0}, {2.5, 250, 2.5},
                                  {4, 350, 3.5}, {5, 450, 4.5}};
  auto window = training_window({p});
  ASSERT_TRUE(window.has_value());
  EXPECT_EQ(window->samples, 350);
  ASSERT_EQ(window->intervals.size(), 2u);
  EXPECT_DOUBLE_EQ(window->intervals[0].second, 2.5);
  EXPECT_DOUBLE_EQ(window->intervals[1].first, 3);
  EXPECT_NEAR(window->seconds, 3.5, 1e-9);  // 100 samples/s, not the 87.5 that counts evaluation
}

TEST(TrainingWindow, CannotTimeAProcessWithoutEnoughWrites) {
  std::vector<TimedProgress> timed = {{0, 1}, {1, 10}, {2, 20}, {5, 50}};
  EXPECT_FALSE(training_window({timed, {}}).has_value()) << "a process that reported nothing";
  EXPECT_FALSE(training_window({timed, {{0, 5}, {1, 10}}}).has_value()) << "only its warm-up";
  EXPECT_FALSE(training_window({}).has_value());
}

gpu::DeviceSample energy_reading(double t, double joules) {
  gpu::DeviceSample s;
  s.unix_s = t;
  s.energy_j = joules;
  return s;
}

TEST(EnergyWithin, InterpolatesTheCounterInsideEachInterval) {
  // 100 W until 10 s, then 300 W; one reading without the counter.
  std::vector<gpu::DeviceSample> device = {energy_reading(0, 0), energy_reading(10, 1000), gpu::DeviceSample{},
                                           energy_reading(20, 4000)};
  device[2].unix_s = 15;
  auto joules = energy_within({device}, {{5, 10}, {12, 14}});
  ASSERT_TRUE(joules.has_value());
  EXPECT_NEAR(*joules, 500 + 600, 1e-9);
  auto two_devices = energy_within({device, device}, {{5, 10}});
  ASSERT_TRUE(two_devices.has_value());
  EXPECT_NEAR(*two_devices, 1000, 1e-9);
  EXPECT_FALSE(energy_within({device}, {{15, 25}}).has_value()) << "past the last reading";
  EXPECT_FALSE(energy_within({}, {{1, 2}}).has_value()) << "no GPU";
}

TEST(EnergyWithin, SharesACounterGapOutByThePowerSampledInIt) {
  // The counter is read at 0 s and 10 s (1,000 J apart); power, sampled
  // every second, is 50 W until 5 s and 150 W after. A window over [5, 10]
  // gets the power's share of the 1,000 J, 737 J, not the 500 J an even
  // spread would say.
  std::vector<gpu::DeviceSample> device;
  for (int t = 0; t <= 10; ++t) {
    gpu::DeviceSample s;
    s.unix_s = t;
    s.power_w = t <= 5 ? 50.0 : 150.0;
    if (t == 0) s.energy_j = 0;
    if (t == 10) s.energy_j = 1000;
    device.push_back(s);
  }
  auto joules = energy_within({device}, {{5, 10}});
  ASSERT_TRUE(joules.has_value());
  // Trapezoids: 250 J over [0, 5], 100 J over [5, 6], 600 J over [6, 10].
  EXPECT_NEAR(*joules, 1000.0 * 700 / 950, 1e-6);
  EXPECT_GT(*joules, 700);
}

TEST(ProgressWatch, KeepsEveryWriteAndCarriesCountsOverAProcesssParts) {
  testing::TempDir dir;
  const std::string path = dir.file("job.progress");
  ProgressWatch watch({path, dir.file("never-written.progress")}, 0.01);
  auto write = [&](int64_t samples, double at) {
    write_file_atomically(path, "{\"samples\": " + std::to_string(samples) + ", \"train_s\": 1.0, \"at\": " +
                                    std::to_string(at) + "}\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
  };
  write(100, 1000);
  write(100, 1000.5);  // the same count: not a new write
  write(300, 1001);
  write(50, 1002);     // a second part starts at 0
  write(150, 1003);
  watch.stop();
  std::vector<TimedProgress> seen = watch.readings(0);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].samples, 100);
  EXPECT_DOUBLE_EQ(seen[0].unix_s, 1000);
  EXPECT_EQ(seen[1].samples, 300);
  EXPECT_EQ(seen[2].samples, 350);
  EXPECT_DOUBLE_EQ(seen[2].train_s, 2.0) << "training seconds carry over too";
  EXPECT_EQ(seen[3].samples, 450);
  EXPECT_DOUBLE_EQ(seen[3].unix_s, 1003);
  EXPECT_TRUE(watch.readings(1).empty());
}

}  // namespace
}  // namespace colo::compare
