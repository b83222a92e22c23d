#pragma once
// Models by name: which spec fields each takes and how it is built.

#include <functional>
#include <string>
#include <vector>

#include "colo/data/dataset.h"
#include "colo/models/classifier.h"
#include "colo/models/model_spec.h"

namespace colo::models {

struct ModelEntry {
  std::string name;
  std::string description;
  // Reads this model's own fields from a [model] table into `spec`.
  std::function<void(const SpecTable&, ModelSpec&)> parse_fields;
  // Builds the model for inputs of `shape`; throws InputError (naming
  // spec.source and the field) when the spec does not fit the input.
  std::function<ClassifierPtr(const ModelSpec&, const data::InputShape&)> build;
};

std::vector<std::string> model_names();

// The entry for `name`; throws std::out_of_range for an unknown name.
const ModelEntry& find_model(const std::string& name);

// Builds the model `spec` names, initialised from LibTorch's global generator
// (seed it first for a reproducible model).
ClassifierPtr build_model(const ModelSpec& spec, const data::InputShape& shape);

}  // namespace colo::models
