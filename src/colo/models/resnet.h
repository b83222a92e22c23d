#pragma once
// The resnet model of the zoo.

#include <cstdint>
#include <vector>

#include "colo/data/dataset.h"
#include "colo/models/classifier.h"
#include "colo/models/model_spec.h"

namespace colo::models {

// Residual blocks per stage for `depth` (18, 34 or 50); 50 uses bottleneck
// blocks with 4x expansion.
std::vector<int64_t> resnet_stage_blocks(int64_t depth);

// The layout of one residual block, shared by the model and its fused form:
// basic (two 3x3) or bottleneck (1x1, 3x3, 1x1 with 4x expansion), each
// convolution followed by BatchNorm, plus a 1x1 projection shortcut when the
// stride or the width changes.
struct BlockConv {
  int64_t in, out, kernel, stride;
};
struct BlockPlan {
  std::vector<BlockConv> convs;
  int64_t out = 0;
  bool shortcut = false;  // shortcut conv: in -> out, 1x1, the block's stride
};
BlockPlan resnet_block_plan(int64_t in, int64_t planes, int64_t stride, bool bottleneck);

// Channels of a stage of `planes` under the width multiplier (at least 1).
int64_t resnet_scaled_channels(int64_t planes, double width);

// Builds a resnet for inputs of `shape` (see model_spec.h for its fields).
// Throws InputError naming spec.source when the spec does not fit the input.
ClassifierPtr build_resnet(const ModelSpec& spec, const data::InputShape& shape);

}  // namespace colo::models
