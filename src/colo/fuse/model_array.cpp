#include "colo/fuse/model_array.h"

#include <stdexcept>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace colo::fuse {
namespace {

// Parameters then buffers, by name.
torch::OrderedDict<std::string, at::Tensor> named_tensors(const torch::nn::Module& module) {
  torch::OrderedDict<std::string, at::Tensor> tensors = module.named_parameters();
  for (const auto& item : module.named_buffers()) tensors.insert(item.key(), item.value());
  return tensors;
}

const at::Tensor& matching(const torch::OrderedDict<std::string, at::Tensor>& tensors,
                           const std::string& name) {
  const at::Tensor* found = tensors.find(name);
  if (found == nullptr) {
    throw std::invalid_argument("fused array and model differ: no tensor named " + name);
  }
  return *found;
}

}  // namespace

void load_models(FusedClassifier& array, const std::vector<models::ClassifierPtr>& models) {
  if (static_cast<int64_t>(models.size()) != array.models()) {
    throw std::invalid_argument("load_models: " + std::to_string(models.size()) +
                                " models for an array of " + std::to_string(array.models()));
  }
  torch::NoGradGuard no_grad;
  auto array_tensors = named_tensors(array);
  for (size_t i = 0; i < models.size(); ++i) {
    auto model_tensors = named_tensors(*models[i]);
    if (model_tensors.size() != array_tensors.size()) {
      throw std::invalid_argument("load_models: model has " + std::to_string(model_tensors.size()) +
                                  " tensors, the array " + std::to_string(array_tensors.size()));
    }
    for (const auto& item : array_tensors) {
      at::Tensor slot = item.value()[static_cast<int64_t>(i)];
      const at::Tensor& source = matching(model_tensors, item.key());
      if (slot.sizes() != source.sizes()) {
        throw std::invalid_argument("load_models: " + item.key() + " has shape " +
                                    c10::str(source.sizes()) + ", the array expects " +
                                    c10::str(slot.sizes()));
      }
      slot.copy_(source);
    }
  }
}

void store_model(const FusedClassifier& array, int64_t index, models::Classifier& model) {
  torch::NoGradGuard no_grad;
  auto array_tensors = named_tensors(array);
  for (auto& item : named_tensors(model)) {
    item.value().copy_(matching(array_tensors, item.key())[index]);
  }
}

void select_models(const FusedClassifier& from, const std::vector<int64_t>& indices,
                   FusedClassifier& to) {
  torch::NoGradGuard no_grad;
  auto from_tensors = named_tensors(from);
  at::Tensor index = at::tensor(indices, at::kLong);
  for (auto& item : named_tensors(to)) {
    const at::Tensor& source = matching(from_tensors, item.key());
    item.value().copy_(source.index_select(0, index.to(source.device())));
  }
}

}  // namespace colo::fuse
