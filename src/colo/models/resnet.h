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

// Channels of a stage of `planes` under the width multiplier (at least 1).
int64_t resnet_scaled_channels(int64_t planes, double width);

// Builds a resnet for inputs of `shape` (see model_spec.h for its fields).
// Throws InputError naming spec.source when the spec does not fit the input.
ClassifierPtr build_resnet(const ModelSpec& spec, const data::InputShape& shape);

}  // namespace colo::models
