#include "colo/fuse/fused_layers.h"

#include <cmath>

#include <ATen/ATen.h>

#include "colo/fuse/grouped_conv.h"

namespace colo::fuse {

// Parameters start uninitialised: an array is always filled from N single
// models (model_array.h), so each model starts exactly as it would alone.
FusedLinear::FusedLinear(int64_t models, int64_t in_features, int64_t out_features)
    : models_(models) {
  weight = register_parameter("weight", at::empty({models, out_features, in_features}));
  bias = register_parameter("bias", at::empty({models, out_features}));
}

at::Tensor FusedLinear::forward(const at::Tensor& x) {
  if (x.dim() == 3) return at::baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2));
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = weight.size(1);
  return at::baddbmm(bias.unsqueeze(1), x.reshape({models_, -1, x.size(-1)}), weight.transpose(1, 2))
      .view(shape);
}

at::Tensor FusedLinear::forward_shared(const at::Tensor& x) {
  int64_t out = weight.size(1);
  at::Tensor rows = x.reshape({-1, x.size(-1)});
  at::Tensor y = at::addmm(bias.reshape({-1}), rows, weight.reshape({models_ * out, -1}).t());
  // [rows, N*out] -> [N, rows, out] -> [N, B, ..., out]
  std::vector<int64_t> shape{models_};
  for (int64_t i = 0; i + 1 < x.dim(); ++i) shape.push_back(x.size(i));
  shape.push_back(out);
  return y.view({rows.size(0), models_, out}).transpose(0, 1).reshape(shape);
}

FusedEmbedding::FusedEmbedding(int64_t models, int64_t vocab, int64_t dim) {
  weight = register_parameter("weight", at::empty({models, vocab, dim}));
}

at::Tensor FusedEmbedding::forward(const at::Tensor& tokens) {
  std::vector<int64_t> shape{weight.size(0)};
  for (int64_t size : tokens.sizes()) shape.push_back(size);
  shape.push_back(weight.size(2));
  return weight.index_select(1, tokens.reshape({-1})).view(shape);
}

at::Tensor fused_self_attention(const at::Tensor& qkv, int64_t heads, const FusedDropout& dropout,
                                bool training) {
  int64_t n = qkv.size(0), b = qkv.size(1), t = qkv.size(2), d = qkv.size(3) / 3, hd = d / heads;
  // [N, B, T, 3, H, hd] -> 3 x [N, B, H, T, hd]
  at::Tensor parts = qkv.view({n, b, t, 3, heads, hd}).permute({3, 0, 1, 4, 2, 5});
  at::Tensor scores = at::matmul(parts[0], parts[1].transpose(-2, -1)) / std::sqrt(double(hd));
  at::Tensor attention = dropout.forward(at::softmax(scores, -1), training);
  return at::matmul(attention, parts[2]).transpose(2, 3).reshape({n, b, t, d});
}

FusedConv2d::FusedConv2d(int64_t models, int64_t in_channels, int64_t out_channels,
                         int64_t kernel, int64_t stride, int64_t padding, bool with_bias)
    : models_(models), stride_(stride), padding_(padding) {
  weight = register_parameter("weight",
                              at::empty({models, out_channels, in_channels, kernel, kernel}));
  if (with_bias) bias = register_parameter("bias", at::empty({models, out_channels}));
}

at::Tensor FusedConv2d::run(const at::Tensor& x, int64_t groups) {
  at::Tensor w = weight.flatten(0, 1);
  at::Tensor b = bias.defined() ? bias.reshape({-1}) : at::Tensor();
  if (channels_last_) {
    return at::conv2d(x.contiguous(at::MemoryFormat::ChannelsLast),
                      w.contiguous(at::MemoryFormat::ChannelsLast), b, {stride_, stride_},
                      {padding_, padding_}, {1, 1}, groups);
  }
  return grouped_conv2d(x, w, b, stride_, padding_, groups, own_grouped_kernels_);
}

at::Tensor FusedConv2d::forward(const at::Tensor& x) { return run(x, models_); }

at::Tensor FusedConv2d::forward_shared(const at::Tensor& x) { return run(x, 1); }

FusedBatchNorm2d::FusedBatchNorm2d(int64_t models, int64_t channels) {
  weight = register_parameter("weight", at::ones({models, channels}));
  bias = register_parameter("bias", at::zeros({models, channels}));
  running_mean = register_buffer("running_mean", at::zeros({models, channels}));
  running_var = register_buffer("running_var", at::ones({models, channels}));
  num_batches_tracked = register_buffer("num_batches_tracked", at::zeros({models}, at::kLong));
}

at::Tensor FusedBatchNorm2d::forward(const at::Tensor& x) {
  if (is_training()) num_batches_tracked.add_(1);
  // reshape of the contiguous buffers is a view, so the running statistics
  // are updated in place.
  return at::batch_norm(x, weight.reshape({-1}), bias.reshape({-1}), running_mean.view({-1}),
                        running_var.view({-1}), is_training(), 0.1, 1e-5,
                        at::globalContext().userEnabledCuDNN());
}

FusedLayerNorm::FusedLayerNorm(int64_t models, int64_t features) {
  weight = register_parameter("weight", at::ones({models, features}));
  bias = register_parameter("bias", at::zeros({models, features}));
}

at::Tensor FusedLayerNorm::forward(const at::Tensor& x) {
  at::Tensor normed = at::layer_norm(x, {x.size(-1)}, {}, {}, 1e-5);
  std::vector<int64_t> shape(x.dim(), 1);
  shape.front() = weight.size(0);
  shape.back() = weight.size(1);
  return at::addcmul(bias.view(shape), normed, weight.view(shape));
}

FusedDropout::FusedDropout(std::vector<double> rates) : rates_(std::move(rates)) {
  for (double rate : rates_) active_ = active_ || rate > 0;
}

at::Tensor FusedDropout::forward(const at::Tensor& x, bool training) const {
  if (!training || !active_) return x;
  // Copied to the device once, so that a step without host transfers can be
  // captured in a CUDA graph.
  if (!keep_.defined() || keep_.device() != x.device()) {
    std::vector<float> keep;
    for (double rate : rates_) keep.push_back(static_cast<float>(1.0 - rate));
    keep_ = at::tensor(keep).to(x.device());
  }
  std::vector<int64_t> shape(x.dim(), 1);
  shape.front() = keep_.size(0);
  at::Tensor keep_t = keep_.view(shape);
  at::Tensor mask = at::rand_like(x).lt(keep_t);
  return x * mask / keep_t;
}

at::Tensor stacked_to_model_major(const at::Tensor& x, int64_t models) {
  return x.reshape({x.size(0), models, -1}).transpose(0, 1);
}

}  // namespace colo::fuse
