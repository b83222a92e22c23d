#include "colo/fuse/relu_max_pool.h"

#include <ATen/ATen.h>

#if COLO_HAS_CUDA
#include "colo/fuse/cuda_stream.h"
#include <torch/csrc/autograd/custom_function.h>

#include "colo/fuse/cuda/relu_max_pool_kernels.h"
#endif

namespace colo::fuse {
namespace {

#if COLO_HAS_CUDA

class OwnReluMaxPool : public torch::autograd::Function<OwnReluMaxPool> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x_in) {
    at::Tensor x = x_in.contiguous();
    const int64_t planes = x.size(0) * x.size(1), h = x.size(2), w = x.size(3);
    at::Tensor y = at::empty({x.size(0), x.size(1), h / 2, w / 2}, x.options());
    at::Tensor winner = at::empty(y.sizes(), x.options().dtype(at::kByte));
    cuda::relu_max_pool2x2_forward(x.data_ptr<float>(), y.data_ptr<float>(), winner.data_ptr<uint8_t>(), planes, h,
                                   w, current_cuda_stream());
    ctx->save_for_backward({winner});
    ctx->saved_data["sizes"] = x.sizes();
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor winner = ctx->get_saved_variables()[0];
    const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    const int64_t h = sizes[2], w = sizes[3];
    at::Tensor dy = grads[0].contiguous();
    // Odd sizes leave a last row or column outside every window: zero it.
    at::Tensor dx = (h % 2 || w % 2) ? at::zeros(sizes, dy.options()) : at::empty(sizes, dy.options());
    cuda::relu_max_pool2x2_backward(dy.data_ptr<float>(), winner.data_ptr<uint8_t>(), dx.data_ptr<float>(),
                                    sizes[0] * sizes[1], h, w, current_cuda_stream());
    return {dx};
  }
};
#endif

}  // namespace

bool own_relu_max_pool_applies(const at::Tensor& x) {
#if COLO_HAS_CUDA
  return x.is_cuda() && x.scalar_type() == at::kFloat && x.dim() == 4 && x.size(2) >= 2 && x.size(3) >= 2;
#else
  (void)x;
  return false;
#endif
}

at::Tensor relu_max_pool2x2(const at::Tensor& x, bool allow_own) {
#if COLO_HAS_CUDA
  if (allow_own && own_relu_max_pool_applies(x)) return OwnReluMaxPool::apply(x);
#endif
  (void)allow_own;
  return at::max_pool2d(at::relu(x), {2, 2});
}

}  // namespace colo::fuse
