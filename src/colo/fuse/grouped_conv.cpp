#include "colo/fuse/grouped_conv.h"

#include <vector>

#include <ATen/ATen.h>

#if COLO_HAS_CUDA
#include "colo/fuse/cuda_stream.h"
#include <torch/csrc/autograd/custom_function.h>

#include "colo/fuse/cuda/grouped_conv_kernels.h"
#endif

namespace colo::fuse {
namespace {

#if COLO_HAS_CUDA
cuda::GroupedConvShape shape_of(const at::Tensor& x, const at::Tensor& weight, int64_t groups, int64_t padding) {
  cuda::GroupedConvShape s;
  s.batch = x.size(0);
  s.groups = groups;
  s.in_per_group = x.size(1) / groups;
  s.out_per_group = weight.size(0) / groups;
  s.height = x.size(2);
  s.width = x.size(3);
  s.kernel = weight.size(2);
  s.padding = padding;
  return s;
}


class OwnGroupedConv : public torch::autograd::Function<OwnGroupedConv> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x_in,
                            const at::Tensor& weight_in, const at::Tensor& bias_in, int64_t groups, int64_t padding) {
    at::Tensor x = x_in.contiguous(), weight = weight_in.contiguous();
    at::Tensor bias = bias_in.contiguous();  // empty: no bias
    auto s = shape_of(x, weight, groups, padding);
    at::Tensor y = at::empty({s.batch, s.groups * s.out_per_group, s.out_height(), s.out_width()}, x.options());
    cuda::grouped_conv_forward(x.data_ptr<float>(), weight.data_ptr<float>(),
                               bias.numel() > 0 ? bias.data_ptr<float>() : nullptr, y.data_ptr<float>(), s,
                               current_cuda_stream());
    ctx->save_for_backward({x, weight});
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["padding"] = padding;
    ctx->saved_data["bias"] = bias.numel() > 0;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    at::Tensor dy = grads[0].contiguous();
    auto s = shape_of(x, weight, ctx->saved_data["groups"].toInt(), ctx->saved_data["padding"].toInt());
    at::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) {
      dx = at::empty_like(x);
      cuda::grouped_conv_input_grad(dy.data_ptr<float>(), weight.data_ptr<float>(), dx.data_ptr<float>(), s,
                                    current_cuda_stream());
    }
    if (ctx->needs_input_grad(1)) {
      std::vector<int64_t> partial_shape{cuda::grouped_conv_weight_grad_slices(s)};
      for (int64_t size : weight.sizes()) partial_shape.push_back(size);
      at::Tensor partial = at::empty(partial_shape, weight.options());
      cuda::grouped_conv_weight_grad(dy.data_ptr<float>(), x.data_ptr<float>(), partial.data_ptr<float>(), s,
                                     current_cuda_stream());
      dw = partial.sum(0);
    }
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) db = dy.sum({0, 2, 3});
    return {dx, dw, db, at::Tensor(), at::Tensor()};
  }
};
#endif

}  // namespace

bool own_grouped_conv_applies(const at::Tensor& x, const at::Tensor& weight, int64_t groups, int64_t stride,
                              int64_t padding) {
#if COLO_HAS_CUDA
  if (!x.is_cuda() || x.scalar_type() != at::kFloat || weight.scalar_type() != at::kFloat) return false;
  if (stride != 1 || groups <= 1 || x.dim() != 4 || weight.dim() != 4) return false;
  if (weight.size(2) != weight.size(3) || x.size(1) / groups > 16 || weight.size(0) / groups > 32) return false;
  return cuda::grouped_conv_shape_supported(shape_of(x, weight, groups, padding));
#else
  (void)x, (void)weight, (void)groups, (void)stride, (void)padding;
  return false;
#endif
}

at::Tensor grouped_conv2d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, int64_t stride,
                          int64_t padding, int64_t groups, bool allow_own) {
#if COLO_HAS_CUDA
  if (allow_own && own_grouped_conv_applies(x, weight, groups, stride, padding)) {
    // Autograd functions take no undefined tensors: no bias is an empty one.
    return OwnGroupedConv::apply(x, weight, bias.defined() ? bias : at::empty({0}, x.options()), groups, padding);
  }
#endif
  (void)allow_own;
  return at::conv2d(x, weight, bias, {stride, stride}, {padding, padding}, {1, 1}, groups);
}

}  // namespace colo::fuse
