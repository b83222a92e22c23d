// The runner against devices that misbehave and jobs of several GPUs, with
// real processes.

#include "colo/sched/runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/gpu/simulated_device.h"
#include "support/temp_dir.h"

namespace colo::sched {
namespace {

// A GPU whose driver stops answering after `good_samples` readings.
class VanishingDevice : public gpu::Device {
 public:
  explicit VanishingDevice(int index, int good_samples) : inner_(index, gpu::SimulatedGpuSpec{}), left_(good_samples) {}
  const gpu::DeviceInfo& info() const override { return inner_.info(); }
  gpu::DeviceSample sample() override {
    if (left_-- <= 0) throw std::runtime_error("NVML_ERROR_GPU_IS_LOST");
    return inner_.sample();
  }
  std::vector<gpu::ProcessUsage> processes() override { throw std::runtime_error("NVML_ERROR_GPU_IS_LOST"); }

 private:
  gpu::SimulatedDevice inner_;
  int left_;
};

JobSpec shell_job(const std::string& name, const std::string& command, int gpus = 1) {
  JobSpec spec;
  spec.name = name;
  spec.command = {"/bin/sh", "-c", command};
  spec.mem_bytes = int64_t{1} << 30;
  spec.sm_share = 0.1;
  spec.gpus = gpus;
  return spec;
}

RunnerOptions quick_options(const testing::TempDir& dir) {
  RunnerOptions options;
  options.mode = CollocationMode::kShared;  // no MPS daemon for test devices
  options.poll_interval_s = 0.05;
  options.log_dir = dir.file("logs");
  return options;
}

TEST(Runner, KeepsSchedulingWhenAGpuStopsAnswering) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  store.submit({shell_job("a", "sleep 0.3"), shell_job("b", "true")});
  std::vector<gpu::DevicePtr> devices{std::make_shared<VanishingDevice>(0, 1)};
  Runner runner(store, devices, quick_options(dir));
  runner.run_until_done();
  for (const auto& job : store.list()) EXPECT_EQ(job.state, JobState::kCompleted) << job.spec.name << " " << job.reason;
}

TEST(Runner, AMultiGpuJobSeesAllItsGpusAndStartsOnlyWhenAllAreFree) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  gpu::SimulatedGpuSpec spec;
  std::vector<gpu::DevicePtr> devices{std::make_shared<gpu::SimulatedDevice>(0, spec),
                                      std::make_shared<gpu::SimulatedDevice>(1, spec)};
  RunnerOptions options = quick_options(dir);
  options.mode = CollocationMode::kExclusive;
  JobSpec one = shell_job("one", "sleep 0.5; date +%s.%N > " + dir.file("one.end"));
  JobSpec two = shell_job("two", "date +%s.%N > " + dir.file("two.start") + "; echo $CUDA_VISIBLE_DEVICES > " +
                                     dir.file("two.gpus"), 2);
  store.submit({one, two});
  Runner runner(store, devices, options);
  runner.step();
  auto waiting = store.get(2);
  EXPECT_EQ(waiting->state, JobState::kPending);
  EXPECT_NE(waiting->reason.find("needs 2 GPUs at once, 1 can take it"), std::string::npos) << waiting->reason;
  runner.run_until_done();
  EXPECT_EQ(store.get(2)->state, JobState::kCompleted);
  EXPECT_EQ(store.get(2)->gpus, (std::vector<int>{0, 1}));
  EXPECT_GE(std::stod(read_file(dir.file("two.start"))), std::stod(read_file(dir.file("one.end"))))
      << "never partly started: it waited for both GPUs";
  std::string visible = read_file(dir.file("two.gpus"));
  EXPECT_EQ(std::count(visible.begin(), visible.end(), ','), 1) << "both GPUs listed: " << visible;
}

}  // namespace
}  // namespace colo::sched
