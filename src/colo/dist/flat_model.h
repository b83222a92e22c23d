#pragma once
// A model whose parameters and gradients live in one flat buffer each, so
// that strategies move, reduce and update them as whole ranges.

#include <cstdint>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>

namespace colo::dist {

// One parameter's place in the flat buffers.
struct ParameterSlot {
  at::Tensor parameter;
  int64_t offset = 0;
  int64_t numel = 0;
};

class FlatModel {
 public:
  // Moves every parameter of `model` (in parameters() order) into one flat
  // float32 buffer on its device and makes the parameters views of it;
  // gradients likewise become views of one flat gradient buffer, which
  // backward accumulates into in place. Throws std::invalid_argument for a
  // model with no parameters or with parameters of several types or devices.
  explicit FlatModel(torch::nn::Module& model);

  at::Tensor& values() { return values_; }     // [P]
  at::Tensor& gradients() { return grads_; }   // [P]
  int64_t size() const { return values_.numel(); }
  const std::vector<ParameterSlot>& slots() const { return slots_; }
  void zero_grad();

 private:
  std::vector<ParameterSlot> slots_;
  at::Tensor values_;
  at::Tensor grads_;
};

// Key range [begin, end) of server `index` of `servers` over a flat buffer of
// `size` elements: contiguous, balanced to within one element.
std::pair<int64_t, int64_t> shard_range(int64_t size, int64_t servers, int64_t index);

}  // namespace colo::dist
