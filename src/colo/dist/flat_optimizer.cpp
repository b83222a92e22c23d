#include "colo/dist/flat_optimizer.h"

#include <algorithm>

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

void FlatOptimizer::take_state_of(const FlatOptimizer& other) {
  auto from = other.state();
  auto to = state();
  size_t shared = std::min(from.size(), to.size()) - 1;
  for (size_t m = 0; m + 1 < to.size(); ++m) {
    if (m < shared) {
      to[m].copy_(from[m]);
    } else {
      to[m].zero_();
    }
  }
  to.back().copy_(from.back());
}

int FlatOptimizer::moment_buffers(const train::OptimizerSpec& spec) {
  if (spec.name != "sgd") return 2;
  return spec.momentum != 0 ? 1 : 0;
}

}  // namespace colo::dist
