#pragma once
// The [model] table of a training spec.

#include <cstdint>
#include <string>
#include <vector>

#include "colo/core/spec_table.h"

namespace colo::models {

// Every field any model takes; each model reads only its own (see
// model_registry.cpp), so a field that does not apply is rejected.
struct ModelSpec {
  std::string name = "mlp";
  std::string activation = "relu";    // mlp, lenet: relu | gelu | tanh
  double dropout = 0.0;               // mlp, transformer
  std::vector<int64_t> widths{256, 128};  // mlp: hidden layer widths
  int64_t depth = 18;                 // resnet: 18 | 34 | 50
  double width = 1.0;                 // resnet: channel multiplier
  int64_t layers = 2;                 // transformer: encoder blocks
  int64_t d_model = 64;               // transformer
  int64_t heads = 4;                  // transformer
  int64_t ff_dim = 0;                 // transformer: 0 = 4 * d_model
  int64_t patch_size = 4;             // transformer over images

  // Where the spec came from, for errors raised while building the model.
  std::string source;
};

// Reads a [model] table; throws InputError for an unknown model, a field that
// does not apply to it, or a value out of range.
ModelSpec parse_model_spec(const SpecTable& table);

}  // namespace colo::models
