#pragma once
// The lenet model of the zoo.

#include "colo/data/dataset.h"
#include "colo/models/classifier.h"
#include "colo/models/model_spec.h"

namespace colo::models {

// The sizes a lenet takes from its input, shared with its fused form.
struct LenetGeometry {
  int64_t channels = 1;
  int64_t padding = 0;  // of the first convolution: 2 for images under 32x32
  int64_t flat = 0;     // features after the second pooling
};

// Throws InputError naming spec.source when `shape` is not an image of at
// least 12x12.
LenetGeometry lenet_geometry(const ModelSpec& spec, const data::InputShape& shape);

// Builds a lenet for inputs of `shape` (see model_spec.h for its fields).
// Throws InputError naming spec.source when the spec does not fit the input.
ClassifierPtr build_lenet(const ModelSpec& spec, const data::InputShape& shape);

}  // namespace colo::models
