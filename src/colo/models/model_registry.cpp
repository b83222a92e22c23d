#include "colo/models/model_registry.h"

#include <stdexcept>

#include "colo/models/lenet.h"
#include "colo/models/mlp.h"
#include "colo/models/resnet.h"
#include "colo/models/transformer.h"

namespace colo::models {
namespace {

const std::vector<std::string> kActivations{"relu", "gelu", "tanh"};

// Adding a model: one file with its builder, one entry here.
const std::vector<ModelEntry>& registry() {
  static const std::vector<ModelEntry> entries = {
      {"mlp", "multi-layer perceptron over flattened inputs",
       [](const SpecTable& t, ModelSpec& s) {
         s.widths = t.integers_or("widths", s.widths, 1);
         s.activation = t.choice_or("activation", s.activation, kActivations);
         s.dropout = t.number_or("dropout", s.dropout, 0.0, 0.99);
       },
       build_mlp},
      {"lenet", "LeNet-5 style CNN (two 5x5 convolutions, three linear layers)",
       [](const SpecTable& t, ModelSpec& s) {
         s.activation = t.choice_or("activation", s.activation, kActivations);
       },
       build_lenet},
      {"resnet", "CIFAR-style ResNet: depth 18/34 (basic blocks) or 50 (bottleneck), BatchNorm",
       [](const SpecTable& t, ModelSpec& s) {
         s.depth = t.integer_or("depth", s.depth, 18, 50);
         if (s.depth != 18 && s.depth != 34 && s.depth != 50) {
           t.fail("depth", "expected 18, 34 or 50, got " + std::to_string(s.depth));
         }
         s.width = t.number_or("width", s.width, 0.0625, 16.0);
       },
       build_resnet},
      {"transformer", "encoder classifier over image patches or tokens",
       [](const SpecTable& t, ModelSpec& s) {
         s.layers = t.integer_or("layers", s.layers, 1, 256);
         s.d_model = t.integer_or("d_model", s.d_model, 1);
         s.heads = t.integer_or("heads", s.heads, 1);
         s.ff_dim = t.integer_or("ff_dim", s.ff_dim, 0);
         s.patch_size = t.integer_or("patch_size", s.patch_size, 1);
         s.dropout = t.number_or("dropout", s.dropout, 0.0, 0.99);
         if (s.d_model % s.heads != 0) {
           t.fail("heads", "expected a divisor of d_model (" + std::to_string(s.d_model) +
                               "), got " + std::to_string(s.heads));
         }
       },
       build_transformer},
  };
  return entries;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.name);
  return names;
}

const ModelEntry& find_model(const std::string& name) {
  for (const auto& entry : registry()) {
    if (entry.name == name) return entry;
  }
  throw std::out_of_range("unknown model " + name);
}

ClassifierPtr build_model(const ModelSpec& spec, const data::InputShape& shape) {
  return find_model(spec.name).build(spec, shape);
}

ModelSpec parse_model_spec(const SpecTable& table) {
  ModelSpec spec;
  spec.source = table.source();
  if (!table.has("name")) table.fail("name", "missing required field (the model's name)");
  spec.name = table.choice_or("name", "", model_names());
  find_model(spec.name).parse_fields(table, spec);
  table.reject_unknown();
  return spec;
}

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters()) count += parameter.numel();
  return count;
}

}  // namespace colo::models
