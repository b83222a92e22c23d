#include "colo/fuse/relu_max_pool.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

namespace colo::fuse {
namespace {

// Values rounded to 0.5 so that windows hold ties, many of them at zero
// after the ReLU.
at::Tensor tied_input(at::IntArrayRef sizes, const at::Device& device) {
  at::manual_seed(3);
  return (at::randn(sizes, at::TensorOptions().device(device)) * 2).round() / 2;
}

// Value and gradient of relu_max_pool2x2 equal ATen's max_pool2d(relu(x))
// exactly (no arithmetic is involved, only selection).
void expect_equals_aten(at::IntArrayRef sizes, const at::Device& device) {
  at::Tensor x = tied_input(sizes, device).requires_grad_(true);
  at::Tensor x_ref = x.detach().clone().requires_grad_(true);
  at::Tensor up = at::randn({sizes[0], sizes[1], sizes[2] / 2, sizes[3] / 2}, x.options().requires_grad(false));
  at::Tensor y = relu_max_pool2x2(x);
  at::Tensor y_ref = at::max_pool2d(at::relu(x_ref), {2, 2});
  (y * up).sum().backward();
  (y_ref * up).sum().backward();
  EXPECT_TRUE(at::equal(y, y_ref));
  EXPECT_TRUE(at::equal(x.grad(), x_ref.grad()));
  EXPECT_GT((x_ref.grad() != 0).sum().item<int64_t>(), 0) << "some gradient flows";
}

TEST(ReluMaxPool, CpuTensorsUseAten) {
  EXPECT_FALSE(own_relu_max_pool_applies(at::zeros({1, 1, 4, 4})));
  expect_equals_aten({2, 3, 6, 8}, at::kCPU);
}

// On a CUDA build with a GPU: colo's kernels take 4-D float32 tensors and
// select the same elements as ATen, ties, zeros and odd sizes included.
TEST(ReluMaxPool, OwnCudaKernelsEqualAten) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  EXPECT_TRUE(own_relu_max_pool_applies(at::zeros({1, 1, 4, 4}, at::kCUDA)));
  EXPECT_FALSE(own_relu_max_pool_applies(at::zeros({1, 1, 4, 4}, at::kCUDA).to(at::kHalf)));
  EXPECT_FALSE(own_relu_max_pool_applies(at::zeros({1, 1, 1, 4}, at::kCUDA))) << "no whole window";
  expect_equals_aten({128, 192, 28, 28}, at::kCUDA);  // 32 LeNets' first layer
  expect_equals_aten({16, 64, 10, 10}, at::kCUDA);
  expect_equals_aten({3, 5, 7, 9}, at::kCUDA);  // odd: the last row and column get no gradient
  // A NaN wins its window, as in ATen.
  at::Tensor x = at::ones({1, 1, 2, 2}, at::kCUDA);
  x[0][0][1][0] = std::nan("");
  EXPECT_TRUE(std::isnan(relu_max_pool2x2(x).item<float>()));
}

}  // namespace
}  // namespace colo::fuse
