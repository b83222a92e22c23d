#include "colo/fuse/fused_classifier.h"

#include <functional>
#include <sstream>

#include "colo/core/error.h"
#include "colo/fuse/fused_layers.h"
#include "colo/fuse/fused_models.h"

namespace colo::fuse {
namespace {

using FusedBuilder = std::function<FusedClassifierPtr(const std::vector<models::ModelSpec>&,
                                                      const data::InputShape&)>;

struct FusedEntry {
  std::string name;
  FusedBuilder build;
};

// Adding a fused model: one file with its builder, one entry here.
const std::vector<FusedEntry>& registry() {
  static const std::vector<FusedEntry> entries = {
      {"mlp", build_fused_mlp},
      {"lenet", build_fused_lenet},
      {"resnet", build_fused_resnet},
      {"transformer", build_fused_transformer},
  };
  return entries;
}

}  // namespace

void FusedClassifier::set_convolution_options(bool channels_last, bool own_cuda_kernels) {
  own_cuda_kernels_ = own_cuda_kernels;
  for (const auto& module : modules()) {
    if (auto conv = std::dynamic_pointer_cast<FusedConv2d>(module)) {
      conv->set_channels_last(channels_last);
      conv->set_own_grouped_kernels(own_cuda_kernels);
    }
  }
}

std::string fusion_key(const models::ModelSpec& spec) {
  std::ostringstream key;
  key << spec.name;
  if (spec.name == "mlp") {
    key << " widths=";
    for (int64_t w : spec.widths) key << w << ",";
    key << " activation=" << spec.activation;
  } else if (spec.name == "lenet") {
    key << " activation=" << spec.activation;
  } else if (spec.name == "resnet") {
    key << " depth=" << spec.depth << " width=" << spec.width;
  } else {
    key << " layers=" << spec.layers << " d_model=" << spec.d_model << " heads=" << spec.heads
        << " ff_dim=" << spec.ff_dim << " patch_size=" << spec.patch_size;
  }
  return key.str();
}

std::vector<std::string> fusable_model_names() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.name);
  return names;
}

FusedClassifierPtr build_fused_model(const std::vector<models::ModelSpec>& specs,
                                     const data::InputShape& shape) {
  if (specs.empty()) throw std::invalid_argument("build_fused_model: no model specs");
  const models::ModelSpec& first = specs.front();
  for (const auto& spec : specs) {
    if (fusion_key(spec) != fusion_key(first)) {
      throw InputError(spec.source, "model",
                       "models of one array must share their architecture: '" +
                           fusion_key(spec) + "' differs from '" + fusion_key(first) + "'");
    }
  }
  for (const auto& entry : registry()) {
    if (entry.name == first.name) return entry.build(specs, shape);
  }
  std::string names;
  for (const auto& name : fusable_model_names()) names += (names.empty() ? "" : ", ") + name;
  throw InputError(first.source, "model.name",
                   "model '" + first.name + "' has no fused form yet (fusable: " + names + ")");
}

}  // namespace colo::fuse
