#pragma once
// An array of N classifiers of one architecture, trained as one fused model.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>

#include "colo/data/dataset.h"
#include "colo/models/model_spec.h"

namespace colo::fuse {

// N models in one module. All N see the same input batch; each computes its
// own logits from its own parameters only.
class FusedClassifier : public torch::nn::Module {
 public:
  explicit FusedClassifier(int64_t models) : models_(models) {}

  int64_t models() const { return models_; }

  // inputs [B, ...] (one batch for every model) -> logits [N, B, classes].
  virtual at::Tensor forward(const at::Tensor& inputs) = 0;

  // Sets every fused convolution's layout (NHWC when `channels_last`) and
  // whether layers may use colo's own CUDA kernels: small-group convolutions
  // (grouped_conv.h) and ReLU + 2x2 max pooling (relu_max_pool.h).
  void set_convolution_options(bool channels_last, bool own_cuda_kernels);

 protected:
  bool own_cuda_kernels() const { return own_cuda_kernels_; }

 private:
  int64_t models_;
  bool own_cuda_kernels_ = false;
};

using FusedClassifierPtr = std::shared_ptr<FusedClassifier>;

// What must be equal for two model specs to share an array: the name and
// every field that shapes a parameter (dropout may differ). Specs with equal
// keys build models whose parameters have equal names and shapes.
std::string fusion_key(const models::ModelSpec& spec);

// Builds the array for `specs` (all with one fusion_key; model i takes
// specs[i]'s dropout). Its parameters are uninitialised: fill them from N
// single models with load_models (model_array.h). Throws InputError when the
// specs cannot share an array or the model has no fused form.
FusedClassifierPtr build_fused_model(const std::vector<models::ModelSpec>& specs,
                                     const data::InputShape& shape);

// Names of the models that have a fused form.
std::vector<std::string> fusable_model_names();

}  // namespace colo::fuse
