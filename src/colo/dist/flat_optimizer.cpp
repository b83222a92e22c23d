#include "colo/dist/flat_optimizer.h"

#include "colo/fuse/fused_optimizer.h"

namespace colo::dist {

FlatOptimizer::FlatOptimizer(at::Tensor values, at::Tensor gradients, const train::OptimizerSpec& spec)
    : values_(values.view({1, values.numel()})) {
  values_.mutable_grad() = gradients.view({1, gradients.numel()});
  optimizer_ = std::make_unique<fuse::FusedOptimizer>(std::vector<at::Tensor>{values_},
                                                      std::vector<train::OptimizerSpec>{spec});
}

FlatOptimizer::~FlatOptimizer() = default;

void FlatOptimizer::step(double lr) {
  optimizer_->set_learning_rate(lr);
  optimizer_->step();
}

std::vector<at::Tensor> FlatOptimizer::state() const {
  std::vector<at::Tensor> state = optimizer_->state();
  for (size_t i = 0; i + 1 < state.size(); ++i) state[i] = state[i].view({-1});
  return state;
}

int FlatOptimizer::moment_buffers(const train::OptimizerSpec& spec) {
  if (spec.name != "sgd") return 2;
  return spec.momentum != 0 ? 1 : 0;
}

}  // namespace colo::dist
