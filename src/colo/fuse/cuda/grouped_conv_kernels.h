#pragma once
// CUDA kernels for the grouped convolutions of fused arrays whose groups are
// small (LeNet-sized: a few input and output channels per model), where
// cuDNN runs one kernel per group. Each of the three operations below covers
// every group in one launch: blocks hold a group's weights and a few samples'
// zero-padded tiles in shared memory, threads a register tile of outputs
// (conv_plan.h). Float32, NCHW, contiguous, stride 1, dilation 1, square
// kernels of size 3 or 5, symmetric zero padding smaller than the kernel.
// Plain C++: this header is shared by nvcc and the LibTorch side.

#include <cstdint>

namespace colo::fuse::cuda {

struct GroupedConvShape {
  int64_t batch = 0, groups = 0;
  int64_t in_per_group = 0, out_per_group = 0;  // channels per group
  int64_t height = 0, width = 0;                // input
  int64_t kernel = 0, padding = 0;
  int64_t out_height() const { return height + 2 * padding - kernel + 1; }
  int64_t out_width() const { return width + 2 * padding - kernel + 1; }
};

// Whether the kernels below handle this shape: kernel 3 or 5, padding below
// the kernel size, and a group's weights plus one sample's tiles within 48 KB
// of shared memory.
bool grouped_conv_shape_supported(const GroupedConvShape& shape);

// y [B, G*out, Ho, Wo] = conv(x [B, G*in, H, W], w [G*out, in, k, k]) + bias
// [G*out] (bias may be null). `stream` is a cudaStream_t.
void grouped_conv_forward(const float* x, const float* w, const float* bias, float* y,
                          const GroupedConvShape& shape, void* stream);

// dx [B, G*in, H, W] from dy [B, G*out, Ho, Wo] and w.
void grouped_conv_input_grad(const float* dy, const float* w, float* dx, const GroupedConvShape& shape,
                             void* stream);

// How many partial weight gradients grouped_conv_weight_grad writes (batch
// chunks x row splits).
int64_t grouped_conv_weight_grad_slices(const GroupedConvShape& shape);

// Partial weight gradients partial [slices, G*out, in, k, k] from dy and x
// (every element overwritten); their sum over the first axis is dw.
void grouped_conv_weight_grad(const float* dy, const float* x, float* partial, const GroupedConvShape& shape,
                              void* stream);

}  // namespace colo::fuse::cuda
