#pragma once
// Moving models into and out of a fused array. Every tensor of an array is
// the per-model tensors stacked on dimension 0 under the single model's name,
// so these are copies by name and index.

#include <cstdint>
#include <vector>

#include "colo/fuse/fused_classifier.h"
#include "colo/models/classifier.h"

namespace colo::fuse {

// Copies the parameters and buffers of `models` (N single models of the
// array's architecture) into `array`. Throws std::invalid_argument when the
// count, a name or a shape does not match.
void load_models(FusedClassifier& array, const std::vector<models::ClassifierPtr>& models);

// Copies model `index` of `array` into `model` (parameters and buffers), so
// that it can be evaluated or saved as if trained alone.
void store_model(const FusedClassifier& array, int64_t index, models::Classifier& model);

// Copies models `indices` of `from` into `to` (an array of indices.size()
// models of the same architecture): compacting an array to its survivors.
void select_models(const FusedClassifier& from, const std::vector<int64_t>& indices,
                   FusedClassifier& to);

}  // namespace colo::fuse
