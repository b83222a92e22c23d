#include "colo/estimate/step_simulation.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "colo/estimate/device_profile.h"
#include "colo/estimate/user_model.h"
#include "support/temp_dir.h"

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

// Two 4 MiB parameters, one temporary each: a loop over the parameters
// frees the first's before taking the second's; foreach holds both.
TEST(StepSimulation, ForeachTakesEveryParametersTemporariesBeforeFreeingAny) {
  TrainingGraph g = two_op_graph("AddmmBackward0");
  g.parameter_bytes = {4 * kOneMiB, 4 * kOneMiB};
  g.ops[1].param_inputs = {0, 1};
  StepConfig config;
  config.batch_size = 1;
  config.eval_batch_size = 0;
  config.optimizer_temporaries = 1;
  const SimulatedPeak single = simulate_training(g, config);
  config.optimizer_foreach = true;
  const SimulatedPeak foreach = simulate_training(g, config);
  EXPECT_EQ(single.phase, "optimizer");
  EXPECT_EQ(foreach.peak_allocated, single.peak_allocated + 4 * kOneMiB);
}

TEST(StepSimulation, TheOptimisersImplementationSetsItsTemporaries) {
  train::OptimizerSpec adam{"adam", 1e-3};
  StepConfig step;
  set_optimizer_footprint(adam, step, "single");
  EXPECT_EQ(step.optimizer_temporaries, 2);
  EXPECT_FALSE(step.optimizer_foreach);
  set_optimizer_footprint(adam, step, "foreach");
  EXPECT_EQ(step.optimizer_temporaries, 1);  // the denominators, one list for all
  EXPECT_TRUE(step.optimizer_foreach);
  adam.weight_decay = 0.1;  // Adam's decay makes grad + wd * param anew; AdamW's is in place
  set_optimizer_footprint(adam, step, "foreach");
  EXPECT_EQ(step.optimizer_temporaries, 2);
  train::OptimizerSpec adamw{"adamw", 1e-3};
  adamw.weight_decay = 0.1;
  set_optimizer_footprint(adamw, step, "foreach");
  EXPECT_EQ(step.optimizer_temporaries, 1);
  set_optimizer_footprint(adamw, step, "fused");
  EXPECT_EQ(step.optimizer_temporaries, 0);
  EXPECT_EQ(step.optimizer_state_tensors, 2);
  EXPECT_THROW(set_optimizer_footprint(adamw, step, "compiled"), std::invalid_argument);
}

// A residual block: x = A(data), a clone; t1 = B(x), which saves x;
// t2 = x + t1; t3 = sum(t2). Every tensor is 1 MiB a sample, but t3.
TrainingGraph residual_graph() {
  TrainingGraph g;
  g.tensors.resize(4);
  for (int t = 0; t < 4; ++t) {
    g.tensors[t].per_sample_bytes = t < 3 ? kOneMiB : 4;
    g.tensors[t].storage = t;
  }
  g.input_bytes_per_sample = 0;
  g.label_bytes_per_sample = 0;
  GraphOp a, b, join, sum;
  a.name = "CloneBackward0", a.outputs = {0};
  b.name = "MulBackward0", b.inputs = {0}, b.outputs = {1}, b.saved = {0}, b.new_grads = {0};
  join.name = "AddBackward0", join.inputs = {0, 1}, join.outputs = {2};
  sum.name = "SumBackward0", sum.inputs = {2}, sum.outputs = {3}, sum.new_grads = {2};
  g.ops = {a, b, join, sum};
  return g;
}

// The backward allocations and frees of one op, in order, as
// COLO_ESTIMATE_TRACE writes them ("A 8388608", "F 8388608").
std::vector<std::string> backward_events_of(const std::string& trace, const std::string& op) {
  std::vector<std::string> events;
  std::istringstream lines(trace);
  std::string what, phase, kind, name, bytes, rest;
  bool in_backward = false;
  while (lines >> what >> phase >> kind >> name >> bytes && std::getline(lines, rest)) {
    if (phase != "-") in_backward = phase == "backward";  // frees name no phase
    if (in_backward && name == op && kind == "activations") events.push_back(what + " " + bytes);
  }
  return events;
}

// As autograd's engine runs it, at batch 8: add's backward hands t2's
// gradient itself to x and t1 (it allocates nothing); B's backward allocates
// its own gradient for x, which is added into x's and let go. Taking a new
// gradient for each of add's inputs and none for B's, as colo did, splits
// the caching allocator's blocks otherwise than the real step does (the H100
// trace of ResNet-18 showed it).
TEST(StepSimulation, AResidualJoinPassesTheGradientThroughAndAddsTheBranchsIntoIt) {
  StepConfig config;
  config.batch_size = 8;
  config.eval_batch_size = 0;
  const testing::TempDir dir;
  const std::string path = dir.file("step_trace.txt");
  ::setenv("COLO_ESTIMATE_TRACE", path.c_str(), 1);
  const SimulatedPeak peak = simulate_training(residual_graph(), config);
  ::unsetenv("COLO_ESTIMATE_TRACE");
  std::ifstream file(path);
  const std::string trace((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::string eight_mib = std::to_string(8 * kOneMiB);
  EXPECT_TRUE(backward_events_of(trace, "AddBackward0").empty()) << trace;
  // Over three steps: its gradient for x, then x (saved) let go, then that gradient once added in.
  const std::vector<std::string> step{"A " + eight_mib, "F " + eight_mib, "F " + eight_mib};
  std::vector<std::string> three_steps;
  for (int i = 0; i < 3; ++i) three_steps.insert(three_steps.end(), step.begin(), step.end());
  EXPECT_EQ(backward_events_of(trace, "MulBackward0"), three_steps) << trace;
  EXPECT_EQ(peak.peak_allocated, 24 * kOneMiB);  // x, t1 and t2 in the forward
}

// How many allocations ("A") or frees ("F") of gradients a replay made, from
// its COLO_ESTIMATE_TRACE.
int gradient_events(const StepConfig& config, const TrainingGraph& graph, const std::string& what) {
  const testing::TempDir dir;
  const std::string path = dir.file("step_trace.txt");
  ::setenv("COLO_ESTIMATE_TRACE", path.c_str(), 1);
  simulate_training(graph, config);
  ::unsetenv("COLO_ESTIMATE_TRACE");
  std::ifstream lines(path);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string event, phase, kind;
    fields >> event >> phase >> kind;
    count += event == what && kind == "gradients";
  }
  return count;
}

// Gradient accumulation as a loop does it (zero_grad(set_to_none=True) once a
// step, then 4 micro-batches): each step's first backward allocates the
// parameter's gradient, the next three each add a transient into it, and the
// next step's zero_grad frees it. Replayed as one backward a step with the
// gradients kept throughout (as colo did), the gradient is allocated once
// and never freed, and the allocator's blocks are laid out otherwise.
TEST(StepSimulation, GradientAccumulationReplaysEveryMicroBatchAndFreesTheGradientsEachStep) {
  const TrainingGraph graph = two_op_graph("AddmmBackward0");
  StepConfig config;
  config.batch_size = 8;
  config.eval_batch_size = 0;
  config.accumulation_steps = 4;
  // Three steps: 1 kept + 3 transients each; the transients freed, and the kept one at steps 2 and 3.
  EXPECT_EQ(gradient_events(config, graph, "A"), 12);
  EXPECT_EQ(gradient_events(config, graph, "F"), 9 + 2);
  const SimulatedPeak accumulated = simulate_training(graph, config);
  config.accumulation_steps = 1;
  EXPECT_EQ(gradient_events(config, graph, "A"), 3);
  EXPECT_EQ(gradient_events(config, graph, "F"), 2);
  // zero_grad(set_to_none=False) with one micro-batch: kept from the first step on, added into after.
  config.keeps_gradients = true;
  EXPECT_EQ(gradient_events(config, graph, "A"), 1 + 2);
  EXPECT_EQ(gradient_events(config, graph, "F"), 2);
  // A later micro-batch's backward holds the kept gradient and its transient
  // at once, as a later step's does when the gradients are kept: the same
  // peak, above one that frees them every step.
  EXPECT_EQ(accumulated.peak_allocated, simulate_training(graph, config).peak_allocated);
  config.keeps_gradients = false;
  EXPECT_GT(accumulated.peak_allocated, simulate_training(graph, config).peak_allocated);
}

TEST(StepSimulation, TheProfilesLibraryWorkspaceHoldsTwoCublasWorkspaces) {
  DeviceProfile profile;
  profile.library_workspace_bytes = 68488704;  // measured on an H100: two 32 MiB workspaces and a little more
  EXPECT_EQ(profile.gemm_workspace_bytes(), 32 * kOneMiB);
  profile.cublas_workspace_bytes = 8 * kOneMiB;  // measured: it wins over the halving
  EXPECT_EQ(profile.gemm_workspace_bytes(), 8 * kOneMiB);
  EXPECT_EQ(default_device_profile().gemm_workspace_bytes(), 32 * kOneMiB);
}

}  // namespace
}  // namespace colo::estimate
