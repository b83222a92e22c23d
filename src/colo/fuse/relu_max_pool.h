#pragma once
// max_pool2d(relu(x), 2): on colo's own CUDA kernels (one pass forward, one
// backward, a byte per output saved instead of ATen's int64 indices and the
// ReLU output) where they apply, else ATen's two operations. Both give the
// same values and gradients.

#include <ATen/Tensor.h>

namespace colo::fuse {

// Whether relu_max_pool2x2 would use colo's kernels for x: a CUDA build and a
// 4-D float32 CUDA tensor of at least 2x2.
bool own_relu_max_pool_applies(const at::Tensor& x);

// at::max_pool2d(at::relu(x), {2, 2}) for x [B, C, H, W]; with `allow_own`
// false always ATen's.
at::Tensor relu_max_pool2x2(const at::Tensor& x, bool allow_own = true);

}  // namespace colo::fuse
