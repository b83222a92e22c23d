#include "colo/fuse/grouped_conv.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

namespace colo::fuse {
namespace {

double relative(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

struct ConvCase {
  int64_t batch, groups, in, out, size, kernel, padding;
  bool bias;
};

// Forward and all three gradients of grouped_conv2d against at::conv2d.
void expect_matches_conv2d(const ConvCase& c, const at::Device& device) {
  at::manual_seed(7);
  auto options = at::TensorOptions().device(device);
  at::Tensor x = at::randn({c.batch, c.groups * c.in, c.size, c.size}, options).requires_grad_(true);
  at::Tensor w = at::randn({c.groups * c.out, c.in, c.kernel, c.kernel}, options).requires_grad_(true);
  at::Tensor b = c.bias ? at::randn({c.groups * c.out}, options).requires_grad_(true) : at::Tensor();
  at::Tensor up = at::randn({c.batch, c.groups * c.out, c.size + 2 * c.padding - c.kernel + 1,
                             c.size + 2 * c.padding - c.kernel + 1}, options);

  EXPECT_EQ(own_grouped_conv_applies(x, w, c.groups, 1, c.padding), device.is_cuda()) << "the path under test";
  at::Tensor y = grouped_conv2d(x, w, b, 1, c.padding, c.groups);
  (y * up).sum().backward();
  at::Tensor dx = x.grad().clone(), dw = w.grad().clone();
  at::Tensor db = c.bias ? b.grad().clone() : at::Tensor();
  x.mutable_grad() = at::Tensor();
  w.mutable_grad() = at::Tensor();
  if (c.bias) b.mutable_grad() = at::Tensor();

  at::Tensor expected = at::conv2d(x, w, b, {1, 1}, {c.padding, c.padding}, {1, 1}, c.groups);
  (expected * up).sum().backward();
  EXPECT_LT(relative(y, expected), 1e-5);
  EXPECT_LT(relative(dx, x.grad()), 1e-5);
  EXPECT_LT(relative(dw, w.grad()), 1e-5);
  if (c.bias) {
    EXPECT_LT(relative(db, b.grad()), 1e-5);
  }
}

TEST(GroupedConv, CpuTensorsUseAtenAndMatchIt) {
  at::Tensor x = at::randn({2, 12, 8, 8}), w = at::randn({8, 6, 3, 3});
  EXPECT_FALSE(own_grouped_conv_applies(x, w, 2, 1, 1));
  expect_matches_conv2d({4, 3, 2, 4, 9, 3, 1, true}, at::kCPU);
}

// On a CUDA build with a GPU: colo's kernels take LeNet's second convolution
// and agree with cuDNN's in value and gradients.
TEST(GroupedConv, OwnCudaKernelsMatchCudnn) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // cuDNN would otherwise round its inputs to TF32 (10-bit mantissa).
  bool tf32 = at::globalContext().allowTF32CuDNN();
  at::globalContext().setAllowTF32CuDNN(false);
  at::Tensor x = at::randn({2, 32 * 6, 12, 12}, at::kCUDA), w = at::randn({32 * 16, 6, 5, 5}, at::kCUDA);
  EXPECT_TRUE(own_grouped_conv_applies(x, w, 32, 1, 0));
  EXPECT_FALSE(own_grouped_conv_applies(x, w, 32, 2, 0)) << "stride 2 is cuDNN's";
  EXPECT_FALSE(own_grouped_conv_applies(x.to(at::kHalf), w, 32, 1, 0));
  expect_matches_conv2d({64, 32, 6, 16, 12, 5, 0, true}, at::kCUDA);   // LeNet conv2, 32 models
  expect_matches_conv2d({16, 8, 3, 8, 10, 3, 1, false}, at::kCUDA);    // 3x3, padded, no bias
  expect_matches_conv2d({3, 5, 16, 8, 7, 3, 1, true}, at::kCUDA);      // 16 input channels per group
  expect_matches_conv2d({13, 4, 6, 16, 14, 5, 2, true}, at::kCUDA);    // odd batch: a short last chunk
  expect_matches_conv2d({9, 3, 1, 6, 28, 5, 2, true}, at::kCUDA);      // LeNet conv1: rows split, 4 column tiles
  expect_matches_conv2d({5, 2, 2, 1, 6, 3, 2, true}, at::kCUDA);       // one output channel, padding 2 of 3
  at::Tensor big = at::randn({4 * 32, 16, 5, 5}, at::kCUDA);           // 51 KB of weights per group
  EXPECT_FALSE(own_grouped_conv_applies(at::randn({2, 4 * 16, 12, 12}, at::kCUDA), big, 4, 1, 0));
  at::globalContext().setAllowTF32CuDNN(tf32);
}

}  // namespace
}  // namespace colo::fuse
