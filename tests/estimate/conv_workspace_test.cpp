#include "colo/estimate/conv_workspace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "colo/estimate/job_model.h"
#include "colo/estimate/step_simulation.h"
#include "support/temp_dir.h"

namespace colo::estimate {
namespace {

ConvGeometry lenet_conv2() { return ConvGeometry::from_key("c6o16k5x5s1p0g1h14w14"); }

TEST(ConvGeometry, KeyRoundTripsAndRejectsMalformedKeys) {
  ConvGeometry c = lenet_conv2();
  EXPECT_EQ(c.in_channels, 6);
  EXPECT_EQ(c.out_channels, 16);
  EXPECT_EQ(c.kernel_h, 5);
  EXPECT_EQ(c.height, 14);
  EXPECT_EQ(ConvGeometry::from_key(c.key()), c);
  EXPECT_THROW(ConvGeometry::from_key("c6o16k5"), std::runtime_error);
  EXPECT_THROW(ConvGeometry::from_key("c6o16k5x5s1p0g1h14w14junk"), std::runtime_error);
  EXPECT_FALSE(c.channels_last);
  ConvGeometry last = ConvGeometry::from_key("c96o96k7x7s1p3g96h56w56cl");
  EXPECT_TRUE(last.channels_last);
  EXPECT_EQ(last.groups, 96);
  EXPECT_EQ(last.key(), "c96o96k7x7s1p3g96h56w56cl");
  EXPECT_THROW(ConvGeometry::from_key("c6o16k5x5s1p0g1h14w14clx"), std::runtime_error);
}

// ConvNeXt's depthwise convolutions run channels last: cuDNN's kernel, with a
// weight-gradient workspace, where the contiguous one runs PyTorch's own.
// A table with both layouts gives each its own; one with contiguous shapes
// only (profiles before layouts) gives both the contiguous one's.
TEST(ConvWorkspaceTable, EachLayoutTakesItsOwnMeasuredShapeFirst) {
  auto contiguous = ConvGeometry::from_key("c96o96k7x7s1p3g96h56w56");
  auto last = ConvGeometry::from_key("c96o96k7x7s1p3g96h56w56cl");
  ConvWorkspaceTable old_table;
  old_table.add(contiguous.key(), ConvPass::kWeightGrad, 32, 0);
  EXPECT_EQ(old_table.workspace_bytes(last, ConvPass::kWeightGrad, 32), 0);
  ConvWorkspaceTable table = old_table;
  table.add(last.key(), ConvPass::kWeightGrad, 32, 318'219'895);
  EXPECT_EQ(table.workspace_bytes(contiguous, ConvPass::kWeightGrad, 32), 0);
  EXPECT_EQ(table.workspace_bytes(last, ConvPass::kWeightGrad, 32), 318'219'895);
  // An unmeasured channels-last convolution takes the nearest channels-last
  // shape, even a less like one, before a contiguous twin of its own shape.
  auto smaller = ConvGeometry::from_key("c96o96k7x7s1p3g96h28w28");
  table.add(smaller.key(), ConvPass::kWeightGrad, 32, 0);
  auto smaller_last = ConvGeometry::from_key("c96o96k7x7s1p3g96h28w28cl");
  EXPECT_EQ(table.nearest_shape(smaller_last, ConvPass::kWeightGrad), last.key());
  EXPECT_EQ(table.nearest_shape(smaller, ConvPass::kWeightGrad), smaller.key());
  // A dense channels-last convolution, with no dense one measured channels
  // last, takes a dense contiguous shape, not a depthwise channels-last one.
  auto dense = ConvGeometry::from_key("c96o192k2x2s2p0g1h56w56");
  table.add(dense.key(), ConvPass::kWeightGrad, 32, 1'000'000);
  auto dense_last = ConvGeometry::from_key("c96o192k2x2s2p0g1h56w56cl");
  EXPECT_EQ(table.nearest_shape(dense_last, ConvPass::kWeightGrad), dense.key());
}

TEST(ConvWorkspaceTable, ExactAtMeasuredBatchesAndHighBetweenThem) {
  ConvWorkspaceTable table;
  const std::string key = lenet_conv2().key();
  table.add(key, ConvPass::kWeightGrad, 64, 64'000);     // 1000 bytes per sample
  table.add(key, ConvPass::kWeightGrad, 128, 256'000);   // another algorithm: 2000 per sample
  EXPECT_EQ(table.workspace_bytes(lenet_conv2(), ConvPass::kWeightGrad, 64), 64'000);
  EXPECT_EQ(table.workspace_bytes(lenet_conv2(), ConvPass::kWeightGrad, 128), 256'000);
  // At 96 the interpolation gives 160000; the larger algorithm scaled gives 192000.
  EXPECT_EQ(table.workspace_bytes(lenet_conv2(), ConvPass::kWeightGrad, 96), 192'000);
  // Outside the range: the nearest measurement, scaled by the batch.
  EXPECT_EQ(table.workspace_bytes(lenet_conv2(), ConvPass::kWeightGrad, 32), 32'000);
  EXPECT_EQ(table.workspace_bytes(lenet_conv2(), ConvPass::kWeightGrad, 256), 512'000);
}

// RegNet's first grouped convolution (2 groups of 24 channels) against the
// H100's measured grouped ones: 32 groups of 2 take 2.5x their input, 4
// groups of 16 1.25x. Equally far by size, it is the one of like groups.
TEST(ConvWorkspaceTable, AGroupedConvolutionTakesTheMeasuredShapeOfLikeChannelsPerGroup) {
  ConvWorkspaceTable table;
  const auto many_groups = ConvGeometry::from_key("c64o64k3x3s2p1g32h112w112");
  const auto few_groups = ConvGeometry::from_key("c64o64k3x3s2p1g4h112w112");
  for (const auto& [c, ratio] : {std::pair{many_groups, 2.5}, {few_groups, 1.25}}) {
    const int64_t per_sample = conv_pass_input_bytes_per_sample(c, ConvPass::kForward);
    table.add(c.key(), ConvPass::kForward, 128, static_cast<int64_t>(ratio * per_sample * 128));
  }
  const auto regnet = ConvGeometry::from_key("c48o48k3x3s2p1g2h112w112");
  EXPECT_EQ(table.nearest_shape(regnet, ConvPass::kForward), few_groups.key());
  EXPECT_NEAR(static_cast<double>(table.workspace_bytes(regnet, ConvPass::kForward, 128)),
              1.25 * static_cast<double>(conv_pass_input_bytes_per_sample(regnet, ConvPass::kForward) * 128), 1e3);
}

TEST(ConvWorkspaceTable, UnknownShapesTakeTheirNearestMeasuredShapeScaledByTheBytesTheyRead) {
  ConvWorkspaceTable table;
  EXPECT_EQ(table.workspace_bytes(lenet_conv2(), ConvPass::kForward, 64), 0);  // empty: nothing known
  // A dense 3x3 at 56 px (ratio 2 of its input), a depthwise 3x3 (ratio 0.5)
  // and a 7x7 stem (ratio 6).
  const auto dense = ConvGeometry::from_key("c64o64k3x3s1p1g1h56w56");
  const auto depthwise = ConvGeometry::from_key("c64o64k3x3s1p1g64h56w56");
  const auto stem = ConvGeometry::from_key("c3o64k7x7s2p3g1h224w224");
  for (const auto& [c, ratio] : {std::pair{dense, 2.0}, {depthwise, 0.5}, {stem, 6.0}}) {
    const int64_t per_sample = conv_pass_input_bytes_per_sample(c, ConvPass::kForward);
    table.add(c.key(), ConvPass::kForward, 32, static_cast<int64_t>(ratio * per_sample * 32));
  }
  // A dense 3x3 at 28 px with twice the channels reads half the bytes; it is
  // nearest to the dense 3x3, not to the depthwise one of the same size.
  const auto query = ConvGeometry::from_key("c128o128k3x3s1p1g1h28w28");
  EXPECT_EQ(table.nearest_shape(query, ConvPass::kForward), dense.key());
  EXPECT_EQ(table.workspace_bytes(query, ConvPass::kForward, 32),
            2 * conv_pass_input_bytes_per_sample(query, ConvPass::kForward) * 32);
  const auto depthwise_query = ConvGeometry::from_key("c96o96k3x3s1p1g96h28w28");
  EXPECT_EQ(table.nearest_shape(depthwise_query, ConvPass::kForward), depthwise.key());
  // A 7x7 stem with another width takes the stem's workspace.
  EXPECT_EQ(table.nearest_shape(ConvGeometry::from_key("c3o48k7x7s2p3g1h224w224"), ConvPass::kForward), stem.key());
  // A pass no shape has: the table's median ratio for it, here nothing.
  EXPECT_EQ(table.nearest_shape(query, ConvPass::kWeightGrad), "");
  EXPECT_EQ(table.workspace_bytes(query, ConvPass::kWeightGrad, 32), 0);
  EXPECT_DOUBLE_EQ(table.fallback_ratio(ConvPass::kForward), 2.0);
  // The input gradient reads the output gradient: 16*10*10*4 bytes per sample.
  EXPECT_EQ(conv_pass_input_bytes_per_sample(lenet_conv2(), ConvPass::kInputGrad), 6400);
}

TEST(ConvWorkspaceTable, HalfPrecisionTakesItsOwnMeasuredTableElseFloat32sScaled) {
  const ConvGeometry stem = ConvGeometry::from_key("c3o24k3x3s2p1g1h224w224");
  ConvWorkspaceTable full, half;
  full.add(stem.key(), ConvPass::kWeightGrad, 256, 1000);
  half.add(stem.key(), ConvPass::kWeightGrad, 256, 361448448);  // bf16 on an H200, where float32 took none
  EXPECT_EQ(conv_workspace_for(full, &half, stem, ConvPass::kWeightGrad, 256, 2), 361448448);
  EXPECT_EQ(conv_workspace_for(full, &half, stem, ConvPass::kWeightGrad, 256, 4), 1000);
  EXPECT_EQ(conv_workspace_for(full, nullptr, stem, ConvPass::kWeightGrad, 256, 2), 500);
  const ConvWorkspaceTable unmeasured;
  EXPECT_EQ(conv_workspace_for(full, &unmeasured, stem, ConvPass::kWeightGrad, 256, 2), 500)
      << "an empty (unmeasured) half table: float32's, scaled";
}

TEST(ConvWorkspaceTable, JsonRoundTripAndClearErrors) {
  ConvWorkspaceTable table;
  table.add(lenet_conv2().key(), ConvPass::kForward, 16, 1 << 20);
  table.add(lenet_conv2().key(), ConvPass::kInputGrad, 16, 3 << 20);
  ConvWorkspaceTable back = ConvWorkspaceTable::from_json(table.to_json());
  EXPECT_EQ(back.shapes(), 1u);
  EXPECT_EQ(back.workspace_bytes(lenet_conv2(), ConvPass::kInputGrad, 16), 3 << 20);
  EXPECT_THROW(ConvWorkspaceTable::from_json("{"), std::runtime_error);
  EXPECT_THROW(ConvWorkspaceTable::from_json("{\"rows\": []}"), std::runtime_error);
  EXPECT_THROW(ConvWorkspaceTable::from_json("{\"shapes\": {\"bad\": {}}}"), std::runtime_error);
  EXPECT_THROW(ConvWorkspaceTable::from_json(
                   "{\"shapes\": {\"c6o16k5x5s1p0g1h14w14\": {\"forward\": [[16]]}}}"),
               std::runtime_error);
}

train::TrainSpec cnn_spec(const testing::TempDir& dir, const std::string& model, const std::string& shape) {
  return train::parse_train_spec(dir.write(
      "spec.toml", "device = \"cpu\"\nbatch_size = 8\neval_batch_size = 16\n[model]\n" + model +
                       "\n[data]\nname = \"synthetic\"\nshape = " + shape +
                       "\nclasses = 10\ntrain_size = 64\ntest_size = 16\n[optimizer]\nname = \"sgd\"\n"));
}

std::set<std::string> conv_keys(const TrainingGraph& g) {
  std::set<std::string> keys;
  for (const GraphOp& op : g.ops) {
    if (op.conv.in_channels > 0) keys.insert(op.conv.key());
  }
  return keys;
}

TEST(TrainingGraph, RecordsEachConvolutionsShape) {
  testing::TempDir dir;
  auto lenet = conv_keys(describe_job(cnn_spec(dir, "name = \"lenet\"", "[1, 28, 28]")).graph);
  EXPECT_EQ(lenet, (std::set<std::string>{"c1o6k5x5s1p2g1h28w28", "c6o16k5x5s1p0g1h14w14"}));
  auto resnet = conv_keys(
      describe_job(cnn_spec(dir, "name = \"resnet\"\ndepth = 18\nwidth = 0.25", "[3, 32, 32]")).graph);
  EXPECT_TRUE(resnet.count("c3o16k3x3s1p1g1h32w32"));   // stem
  EXPECT_TRUE(resnet.count("c16o32k3x3s2p1g1h32w32"));  // first block of stage 2
  EXPECT_TRUE(resnet.count("c16o32k1x1s2p0g1h32w32"));  // its shortcut
  EXPECT_TRUE(resnet.count("c128o128k3x3s1p1g1h4w4"));  // stage 4
}

TEST(StepSimulation, ConvolutionWorkspaceRaisesThePeakItCovers) {
  testing::TempDir dir;
  JobModel job = describe_job(cnn_spec(dir, "name = \"lenet\"", "[1, 28, 28]"));
  job.step.batch_size = 256;
  job.step.eval_batch_size = 0;
  SimulatedPeak without = simulate_training(job.graph, job.step);
  // A weight-gradient workspace of 1 GiB for conv2 dwarfs every tensor of
  // the step: it alone decides the allocated peak, in backward.
  ConvWorkspaceTable table;
  table.add(lenet_conv2().key(), ConvPass::kWeightGrad, 256, int64_t{1} << 30);
  SimulatedPeak with = simulate_training(job.graph, job.step, &table);
  EXPECT_EQ(with.phase, "backward");
  EXPECT_EQ(with.workspace, int64_t{1} << 30);  // reported apart from the activations
  EXPECT_EQ(without.workspace, 0);
  EXPECT_GE(with.peak_allocated, (int64_t{1} << 30) + job.graph.total_parameter_bytes());
  EXPECT_LE(with.peak_allocated, without.peak_allocated + (int64_t{1} << 30));
  EXPECT_GE(with.peak_reserved, with.peak_allocated);
}

// zero_grad(set_to_none=False) and gradient accumulation keep every
// gradient from the first backward on: from the second step, a backward
// holds all of them from its start, and each parameter's incoming gradient
// is a transient beside its kept one.
TEST(StepSimulation, KeptGradientsAreAllLiveThroughTheBackward) {
  testing::TempDir dir;
  JobModel job = describe_job(cnn_spec(dir, "name = \"lenet\"", "[1, 28, 28]"));
  job.step.batch_size = 256;
  job.step.eval_batch_size = 0;
  const int64_t all_gradients = job.graph.total_parameter_bytes();
  SimulatedPeak freed = simulate_training(job.graph, job.step);
  job.step.keeps_gradients = true;
  SimulatedPeak kept = simulate_training(job.graph, job.step);
  EXPECT_EQ(kept.phase, "backward");
  EXPECT_GE(kept.gradients, all_gradients);  // every kept one, and an incoming one beside it
  int64_t largest = 0;
  for (int64_t bytes : job.graph.parameter_bytes) largest = std::max(largest, bytes);
  EXPECT_LE(kept.gradients, all_gradients + largest);
  EXPECT_GT(kept.peak_allocated, freed.peak_allocated);
}

}  // namespace
}  // namespace colo::estimate
