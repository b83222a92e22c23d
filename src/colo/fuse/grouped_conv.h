#pragma once
// The grouped convolution of a fused array's layers: colo's own CUDA kernels
// (one launch for all groups) where groups are small enough that cuDNN would
// run one kernel per group, else at::conv2d. Both give the same result to
// float32 rounding and both are differentiable.

#include <cstdint>

#include <ATen/Tensor.h>

namespace colo::fuse {

// Whether grouped_conv2d would use colo's kernels for these arguments: a
// CUDA build, float32 CUDA tensors, stride 1, more than one group, a 3x3 or
// 5x5 kernel, at most 16 input and 32 output channels per group, and tiles
// that fit shared memory (cuda/grouped_conv_kernels.h).
bool own_grouped_conv_applies(const at::Tensor& x, const at::Tensor& weight, int64_t groups, int64_t stride,
                              int64_t padding);

// conv2d(x [B, G*in, H, W], weight [G*out, in, k, k], bias [G*out] or
// undefined, stride, padding, groups G); with `allow_own` false always
// at::conv2d.
at::Tensor grouped_conv2d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, int64_t stride,
                          int64_t padding, int64_t groups, bool allow_own = true);

}  // namespace colo::fuse
