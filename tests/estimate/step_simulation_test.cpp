#include "colo/estimate/step_simulation.h"

#include <gtest/gtest.h>

#include "colo/estimate/device_profile.h"

namespace colo::estimate {
namespace {

constexpr int64_t kOneMiB = 1 << 20;

// x -> first op (1 MiB a sample) -> a linear layer's product (4 KiB a sample, one 4 MiB weight).
TrainingGraph two_op_graph(const std::string& product) {
  TrainingGraph g;
  g.tensors.resize(2);
  g.tensors[0].per_sample_bytes = kOneMiB;
  g.tensors[0].storage = 0;
  g.tensors[1].per_sample_bytes = 4096;
  g.tensors[1].storage = 1;
  g.parameter_bytes = {4 * kOneMiB};
  g.input_bytes_per_sample = 4096;
  GraphOp first;
  first.name = "MulBackward0";
  first.outputs = {0};
  GraphOp second;
  second.name = product;
  second.inputs = {0};
  second.outputs = {1};
  second.saved = {0};
  second.param_inputs = {0};
  g.ops = {first, second};
  return g;
}

TEST(StepSimulation, AMatrixProductTakesCublassWorkspaceOncePerThreadAndKeepsIt) {
  StepConfig config;
  config.batch_size = 64;
  config.eval_batch_size = 0;
  const SimulatedPeak without = simulate_training(two_op_graph("AddmmBackward0"), config);
  config.gemm_workspace_bytes = 32 * kOneMiB;
  const SimulatedPeak with = simulate_training(two_op_graph("AddmmBackward0"), config);
  // One for the forward's thread, one for autograd's, over three steps.
  EXPECT_EQ(without.gemm_workspaces, 0);
  EXPECT_EQ(with.gemm_workspaces, 2);
  EXPECT_EQ(with.peak_allocated, without.peak_allocated + 64 * kOneMiB);
  EXPECT_GE(with.workspace, 64 * kOneMiB);
  // No matrix product, no cuBLAS workspace.
  EXPECT_EQ(simulate_training(two_op_graph("MulBackward0"), config).gemm_workspaces, 0);
}

TEST(StepSimulation, TheProfilesLibraryWorkspaceHoldsTwoCublasWorkspaces) {
  DeviceProfile profile;
  profile.library_workspace_bytes = 68488704;  // measured on an H100: two 32 MiB workspaces and a little more
  EXPECT_EQ(profile.gemm_workspace_bytes(), 32 * kOneMiB);
  EXPECT_EQ(default_device_profile().gemm_workspace_bytes(), 32 * kOneMiB);
}

}  // namespace
}  // namespace colo::estimate
