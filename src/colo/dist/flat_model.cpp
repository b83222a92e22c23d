#include "colo/dist/flat_model.h"

#include <stdexcept>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace colo::dist {

FlatModel::FlatModel(torch::nn::Module& model) {
  auto parameters = model.parameters();
  if (parameters.empty()) throw std::invalid_argument("FlatModel: the model has no parameters");
  int64_t total = 0;
  for (const auto& p : parameters) {
    if (p.scalar_type() != at::kFloat || p.device() != parameters.front().device()) {
      throw std::invalid_argument("FlatModel: parameters must all be float32 on one device");
    }
    slots_.push_back(ParameterSlot{p, total, p.numel()});
    total += p.numel();
  }
  auto options = parameters.front().options();
  values_ = at::empty({total}, options);
  grads_ = at::zeros({total}, options);
  torch::NoGradGuard no_grad;
  for (auto& slot : slots_) {
    at::Tensor value = values_.narrow(0, slot.offset, slot.numel).view(slot.parameter.sizes());
    value.copy_(slot.parameter);
    slot.parameter.set_data(value);
    slot.parameter.mutable_grad() = grads_.narrow(0, slot.offset, slot.numel).view(slot.parameter.sizes());
  }
}

void FlatModel::zero_grad() { grads_.zero_(); }

std::pair<int64_t, int64_t> shard_range(int64_t size, int64_t servers, int64_t index) {
  int64_t base = size / servers, extra = size % servers;
  int64_t begin = index * base + std::min(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

}  // namespace colo::dist
