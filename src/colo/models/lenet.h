#pragma once
// The lenet model of the zoo.

#include "colo/data/dataset.h"
#include "colo/models/classifier.h"
#include "colo/models/model_spec.h"

namespace colo::models {

// Builds a lenet for inputs of `shape` (see model_spec.h for its fields).
// Throws InputError naming spec.source when the spec does not fit the input.
ClassifierPtr build_lenet(const ModelSpec& spec, const data::InputShape& shape);

}  // namespace colo::models
