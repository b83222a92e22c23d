#pragma once
// CUDA kernels for max_pool2d(relu(x), 2) of NCHW float32 tensors, forward
// and backward in one pass each, with PyTorch's semantics: the first maximum
// of each 2x2 window in row-major order wins (NaN beats every number), and
// the gradient reaches that element only where its ReLU output is positive.
// Plain C++: shared by nvcc and the LibTorch side.

#include <cstdint>

namespace colo::fuse::cuda {

// x [planes, height, width] -> y [planes, height / 2, width / 2] and, per
// output, which window element won (0-3) or 4 where the maximum is not
// positive (no gradient). `stream` is a cudaStream_t.
void relu_max_pool2x2_forward(const float* x, float* y, uint8_t* winner, int64_t planes, int64_t height,
                              int64_t width, void* stream);

// dx [planes, height, width] from dy and the winners: every element that
// lies in a window is written (dy or 0); a last odd row or column is not.
void relu_max_pool2x2_backward(const float* dy, const uint8_t* winner, float* dx, int64_t planes,
                               int64_t height, int64_t width, void* stream);

}  // namespace colo::fuse::cuda
