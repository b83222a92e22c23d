#pragma once
// The transformer model of the zoo.

#include <ATen/Tensor.h>

#include "colo/data/dataset.h"
#include "colo/models/classifier.h"
#include "colo/models/model_spec.h"

namespace colo::models {

// Square patches of images [B, C, H, W] as tokens: [B, (H/p)*(W/p), C*p*p],
// row-major over the patch grid (p divides H and W).
at::Tensor image_patches(const at::Tensor& images, int64_t patch_size);

// Builds a transformer for inputs of `shape` (see model_spec.h for its fields).
// Throws InputError naming spec.source when the spec does not fit the input.
ClassifierPtr build_transformer(const ModelSpec& spec, const data::InputShape& shape);

}  // namespace colo::models
