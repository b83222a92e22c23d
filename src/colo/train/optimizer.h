#pragma once
// Optimisers a training spec may name: SGD, Adam, AdamW.

#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/optim/optimizer.h>

#include "colo/core/spec_table.h"

namespace colo::train {

// The [optimizer] table.
struct OptimizerSpec {
  std::string name = "sgd";  // sgd | adam | adamw
  double lr = 0.1;
  double momentum = 0.0;     // sgd
  bool nesterov = false;     // sgd; needs momentum > 0
  double weight_decay = 0.0; // sgd, adam: L2 in the gradient; adamw: decoupled
  double beta1 = 0.9;        // adam, adamw
  double beta2 = 0.999;
  double eps = 1e-8;
};

// Reads an [optimizer] table (absent: SGD with lr 0.1); throws InputError.
OptimizerSpec parse_optimizer_spec(const SpecTable* table);

// A LibTorch optimiser over `parameters` as `spec` describes.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& spec,
                                                        std::vector<at::Tensor> parameters);

// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace colo::train
