#include "colo/train/optimizer.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace colo::train {

OptimizerSpec parse_optimizer_spec(const SpecTable* table) {
  OptimizerSpec spec;
  if (table == nullptr) return spec;
  const SpecTable& t = *table;
  spec.name = t.choice_or("name", spec.name, {"sgd", "adam", "adamw"});
  spec.lr = t.number_or("lr", spec.name == "sgd" ? 0.1 : 1e-3, 0.0, 1e3);
  if (!(spec.lr > 0)) t.fail("lr", "expected a learning rate > 0");
  spec.weight_decay = t.number_or("weight_decay", spec.name == "adamw" ? 0.01 : 0.0, 0.0, 10.0);
  if (spec.name == "sgd") {
    spec.momentum = t.number_or("momentum", spec.momentum, 0.0, 0.9999);
    spec.nesterov = t.boolean_or("nesterov", spec.nesterov);
    if (spec.nesterov && spec.momentum <= 0) {
      t.fail("nesterov", "Nesterov momentum needs optimizer.momentum > 0");
    }
  } else {
    auto betas = t.numbers_or("betas", {spec.beta1, spec.beta2});
    if (betas.size() != 2 || betas[0] < 0 || betas[0] >= 1 || betas[1] < 0 || betas[1] >= 1) {
      t.fail("betas", "expected two numbers in [0, 1), e.g. [0.9, 0.999]");
    }
    spec.beta1 = betas[0];
    spec.beta2 = betas[1];
    spec.eps = t.number_or("eps", spec.eps, 0.0, 1.0);
  }
  t.reject_unknown();
  return spec;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& spec,
                                                        std::vector<at::Tensor> parameters) {
  if (spec.name == "adam" || spec.name == "adamw") {
    auto betas = std::make_tuple(spec.beta1, spec.beta2);
    if (spec.name == "adam") {
      return std::make_unique<torch::optim::Adam>(
          std::move(parameters),
          torch::optim::AdamOptions(spec.lr).betas(betas).eps(spec.eps).weight_decay(spec.weight_decay));
    }
    return std::make_unique<torch::optim::AdamW>(
        std::move(parameters),
        torch::optim::AdamWOptions(spec.lr).betas(betas).eps(spec.eps).weight_decay(spec.weight_decay));
  }
  return std::make_unique<torch::optim::SGD>(
      std::move(parameters), torch::optim::SGDOptions(spec.lr)
                                 .momentum(spec.momentum)
                                 .nesterov(spec.nesterov)
                                 .weight_decay(spec.weight_decay));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace colo::train
