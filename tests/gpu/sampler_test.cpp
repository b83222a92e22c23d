#include "colo/gpu/sampler.h"

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "colo/core/json_lines.h"
#include "colo/core/stopwatch.h"
#include "colo/gpu/simulated_device.h"
#include "support/temp_dir.h"

namespace colo::gpu {
namespace {

std::vector<DevicePtr> two_gpus() {
  return {std::make_shared<SimulatedDevice>(0, SimulatedGpuSpec{}),
          std::make_shared<SimulatedDevice>(1, SimulatedGpuSpec{})};
}

int count_lines(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  return lines;
}

TEST(Sampler, SamplesEveryDeviceAtTheInterval) {
  Sampler sampler(two_gpus(), {0.1, 1000, ""});
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1050));
  sampler.stop();
  // Ticks at 0, 0.1, ..., 1.0 s: 11, give or take scheduling.
  EXPECT_GE(sampler.ticks(), 9u);
  EXPECT_LE(sampler.ticks(), 12u);
  EXPECT_EQ(sampler.samples(0).size(), sampler.ticks());
  EXPECT_EQ(sampler.samples(1).front().index, 1);
}

TEST(Sampler, RingBufferKeepsTheNewestSamples) {
  auto gpu = std::make_shared<SimulatedDevice>(0, SimulatedGpuSpec{});
  Sampler sampler({gpu}, {0.1, 3, ""});
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  gpu->place(1, {1, 1 << 30, 0.5});
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  sampler.stop();
  auto samples = sampler.samples(0);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples.back().mem_used_bytes, 1 << 30) << "the newest samples see the placed job";
}

TEST(Sampler, WritesCsvWithHeaderAndOneRowPerDevicePerTick) {
  testing::TempDir dir;
  {
    Sampler sampler(two_gpus(), {0.1, 100, dir.file("s.csv")});
    sampler.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    sampler.stop();
    EXPECT_EQ(count_lines(dir.file("s.csv")), 1 + 2 * static_cast<int>(sampler.ticks()));
  }
  std::ifstream in(dir.file("s.csv"));
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, sample_csv_header());
}

TEST(Sampler, WritesJsonLinesForOtherExtensions) {
  testing::TempDir dir;
  Sampler sampler(two_gpus(), {0.1, 100, dir.file("s.jsonl")});
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  sampler.stop();
  auto records = read_json_lines(dir.file("s.jsonl"));
  ASSERT_GE(records.size(), 2u);
  EXPECT_DOUBLE_EQ(records[0]["power_w"].get<double>(), SimulatedGpuSpec{}.idle_power_w);  // no job on it
  EXPECT_EQ(records[1]["index"], 1);
}

TEST(Sampler, RejectsIntervalsUnderATenthOfASecond) {
  EXPECT_THROW(Sampler(two_gpus(), {0.05, 10, ""}), std::invalid_argument);
}

TEST(Sampler, OwnCostIsSmallAtTenHertz) {
  Sampler sampler(two_gpus(), {0.1, 100, ""});
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  sampler.stop();
  EXPECT_LT(sampler.thread_cpu_s(), 0.05) << "well under 5% of a core with simulated devices";
}

// A device on the wall clock whose energy counter is read every third
// sample, as NVML's once a second against a faster sampler.
class SparseEnergyDevice : public Device {
 public:
  const DeviceInfo& info() const override { return info_; }
  DeviceSample sample() override {
    DeviceSample s;
    s.unix_s = unix_time_s();
    if (calls_++ % 3 == 0) s.energy_j = 100.0 + calls_;
    return s;
  }
  std::vector<ProcessUsage> processes() override { return {}; }

 private:
  DeviceInfo info_;
  int calls_ = 0;
};

TEST(Sampler, WaitsForAnEnergyReadingPastATimeAndGivesUpAtItsLimit) {
  Sampler sampler({std::make_shared<SparseEnergyDevice>()}, {0.1, 1000, ""});
  sampler.start();
  const double t = unix_time_s();
  ASSERT_TRUE(sampler.wait_for_energy_after(t, 2.0));
  const double waited = unix_time_s() - t;
  std::vector<DeviceSample> samples = sampler.samples(0);
  EXPECT_TRUE(samples.back().energy_j && samples.back().unix_s >= t) << "returned on the reading it waited for";
  EXPECT_LT(waited, 1.0) << "a reading every 0.3 s is found within a few ticks";
  sampler.stop();
  Stopwatch clock;
  EXPECT_FALSE(sampler.wait_for_energy_after(unix_time_s() + 60, 0.3)) << "a stopped sampler takes no reading";
  EXPECT_GE(clock.elapsed_s(), 0.29);
}

}  // namespace
}  // namespace colo::gpu
