#pragma once
// The common shape of every model in the zoo.

#include <cstdint>
#include <memory>

#include <torch/nn/module.h>

namespace colo::models {

// A classifier: maps a batch of inputs [B, ...] to logits [B, classes].
class Classifier : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& inputs) = 0;
};

using ClassifierPtr = std::shared_ptr<Classifier>;

// Number of trainable scalars in `module` (buffers such as BatchNorm running
// statistics excluded).
int64_t parameter_count(const torch::nn::Module& module);

}  // namespace colo::models
