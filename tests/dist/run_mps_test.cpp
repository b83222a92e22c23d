#include "colo/dist/run_mps.h"

#include <memory>

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/gpu/simulated_device.h"

namespace colo::dist {
namespace {

// A GPU as NVML would list it: not simulated, nothing read from it.
class ListedGpu : public gpu::Device {
 public:
  const gpu::DeviceInfo& info() const override { return info_; }
  gpu::DeviceSample sample() override { return {}; }
  std::vector<gpu::ProcessUsage> processes() override { return {}; }

 private:
  gpu::DeviceInfo info_;
};

ClusterSpec ps_run(const std::string& mps, const std::string& strategy = "param_server") {
  ClusterSpec spec;
  spec.strategy = strategy;
  spec.servers = strategy == "allreduce" ? 0 : 2;
  spec.train.device = "auto";
  spec.train.source = "cluster.toml";
  spec.param_server.mps = mps;
  return spec;
}

std::vector<gpu::DevicePtr> one_gpu() { return {std::make_shared<ListedGpu>()}; }
std::vector<gpu::DevicePtr> no_gpu() { return {}; }
std::vector<gpu::DevicePtr> simulated_gpu() { return {std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})}; }

TEST(RunMps, ServersOnRealGpusStartADaemonUnlessOff) {
  EXPECT_TRUE(plan_run_mps(ps_run("auto"), one_gpu, nullptr).start_daemon);
  EXPECT_TRUE(plan_run_mps(ps_run("on"), one_gpu, nullptr).start_daemon);
  EXPECT_TRUE(plan_run_mps(ps_run("auto", "switch"), one_gpu, nullptr).start_daemon);
  RunMpsPlan off = plan_run_mps(ps_run("off"), one_gpu, nullptr);
  EXPECT_FALSE(off.start_daemon);
  EXPECT_TRUE(off.note.empty());
}

TEST(RunMps, NoDaemonWithoutServersOnTheCpuOrWithoutARealGpu) {
  // The GPUs are not even looked for where the spec decides alone.
  auto never = []() -> std::vector<gpu::DevicePtr> { throw std::logic_error("looked for GPUs"); };
  EXPECT_FALSE(plan_run_mps(ps_run("off"), never, nullptr).start_daemon);
  EXPECT_FALSE(plan_run_mps(ps_run("auto", "allreduce"), one_gpu, nullptr).start_daemon);
  ClusterSpec cpu = ps_run("auto");
  cpu.train.device = "cpu";
  EXPECT_FALSE(plan_run_mps(cpu, one_gpu, nullptr).start_daemon);
  EXPECT_FALSE(plan_run_mps(ps_run("auto"), no_gpu, nullptr).start_daemon);
  EXPECT_FALSE(plan_run_mps(ps_run("auto"), simulated_gpu, nullptr).start_daemon);
}

TEST(RunMps, OnIsAnErrorWhereMpsCannotHelpNamingTheField) {
  using Devices = std::vector<gpu::DevicePtr> (*)();
  for (const auto& [spec, devices] : {std::pair<ClusterSpec, Devices>{ps_run("on", "allreduce"), one_gpu},
                                      std::pair<ClusterSpec, Devices>{ps_run("on"), no_gpu}}) {
    try {
      plan_run_mps(spec, devices, nullptr);
      ADD_FAILURE() << "mps = \"on\" accepted for " << spec.strategy << " on " << devices().size() << " GPUs";
    } catch (const InputError& error) {
      EXPECT_EQ(error.field(), "param_server.mps");
      EXPECT_EQ(error.source(), "cluster.toml");
    }
  }
}

TEST(RunMps, ADaemonNamedByTheEnvironmentIsUsedNotStartedAgain) {
  RunMpsPlan plan = plan_run_mps(ps_run("auto"), one_gpu, "/tmp/their-mps");
  EXPECT_FALSE(plan.start_daemon);
  EXPECT_NE(plan.note.find("/tmp/their-mps"), std::string::npos) << plan.note;
  EXPECT_TRUE(plan_run_mps(ps_run("auto"), one_gpu, "").start_daemon);
}

}  // namespace
}  // namespace colo::dist
