#pragma once
// Array ("horizontally fused") layers: one module holds the same layer of N
// models and runs all N at once. Every parameter and buffer is the N per-model
// tensors stacked on a new leading axis, under the name the single layer uses
// (a Linear's "weight" [out, in] becomes [N, out, in]), so an array and N
// single models convert into each other by name (see model_array.h).
//
// Two activation layouts carry the model axis explicitly:
//   model-major  [N, B, F...]     for linear layers, dropout, losses
//   stacked      [B, N*C, H, W]   for convolutions, BatchNorm and pooling:
//                                 model i owns channels [i*C, (i+1)*C)
// A model's computation never reads another model's slice, so one model's
// NaN or divergence leaves the others untouched.

#include <cstdint>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>

namespace colo::fuse {

// N linear layers in one batched GEMM.
class FusedLinear : public torch::nn::Module {
 public:
  FusedLinear(int64_t models, int64_t in_features, int64_t out_features);

  // x [N, B, ..., in] -> [N, B, ..., out].
  at::Tensor forward(const at::Tensor& x);
  // x [B, ..., in], the same input for every model -> [N, B, ..., out] (one
  // GEMM with N*out columns instead of N copies of the input).
  at::Tensor forward_shared(const at::Tensor& x);

  at::Tensor weight, bias;  // [N, out, in], [N, out]

 private:
  int64_t models_;
};

// N 2-D convolutions as one grouped convolution over stacked channels.
class FusedConv2d : public torch::nn::Module {
 public:
  FusedConv2d(int64_t models, int64_t in_channels, int64_t out_channels, int64_t kernel,
              int64_t stride, int64_t padding, bool bias);

  // x [B, N*in, H, W] (stacked) -> [B, N*out, H', W'].
  at::Tensor forward(const at::Tensor& x);
  // x [B, in, H, W], the same input for every model -> [B, N*out, H', W'] (an
  // ungrouped convolution with N*out filters).
  at::Tensor forward_shared(const at::Tensor& x);

  at::Tensor weight, bias;  // [N, out, in, k, k], [N, out] (undefined without bias)

  // Runs in NHWC memory layout (inputs and outputs channels-last), which
  // cuDNN serves with faster grouped-convolution kernels on recent GPUs.
  void set_channels_last(bool on) { channels_last_ = on; }
  // Lets an NCHW float32 grouped convolution with small groups run on colo's
  // own CUDA kernels (grouped_conv.h); off by default.
  void set_own_grouped_kernels(bool on) { own_grouped_kernels_ = on; }

 private:
  at::Tensor run(const at::Tensor& x, int64_t groups);
  int64_t models_, stride_, padding_;
  bool channels_last_ = false;
  bool own_grouped_kernels_ = false;
};

// N BatchNorm2d layers (momentum 0.1, eps 1e-5, as torch::nn::BatchNorm2d)
// over stacked channels; each model keeps its own running statistics.
class FusedBatchNorm2d : public torch::nn::Module {
 public:
  FusedBatchNorm2d(int64_t models, int64_t channels);

  // x [B, N*C, H, W] -> same shape.
  at::Tensor forward(const at::Tensor& x);

  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};

// N embedding tables (torch::nn::Embedding's "weight" [vocab, dim] stacked).
class FusedEmbedding : public torch::nn::Module {
 public:
  FusedEmbedding(int64_t models, int64_t vocab, int64_t dim);

  // tokens [B, ...] int64, the same for every model -> [N, B, ..., dim].
  at::Tensor forward(const at::Tensor& tokens);

  at::Tensor weight;  // [N, vocab, dim]
};

// Multi-head self-attention of N models at once, without its projections:
// qkv [N, B, T, 3*D] (queries, keys, values side by side, as a single
// model's qkv layer produces them) -> [N, B, T, D], each model attending
// over its own tokens; `dropout` drops attention weights per model.
at::Tensor fused_self_attention(const at::Tensor& qkv, int64_t heads, const class FusedDropout& dropout,
                                bool training);

// N LayerNorms over the last dimension of a model-major tensor.
class FusedLayerNorm : public torch::nn::Module {
 public:
  FusedLayerNorm(int64_t models, int64_t features);

  // x [N, ..., features] -> same shape.
  at::Tensor forward(const at::Tensor& x);

  at::Tensor weight, bias;  // [N, features]
};

// Dropout with one rate per model. Inverted dropout as at::dropout: in
// training, each element is kept with probability 1 - rate_i and scaled by
// 1 / (1 - rate_i); in evaluation it is the identity.
class FusedDropout {
 public:
  explicit FusedDropout(std::vector<double> rates);

  // x model-major [N, ...].
  at::Tensor forward(const at::Tensor& x, bool training) const;
  bool active() const { return active_; }

 private:
  std::vector<double> rates_;
  bool active_ = false;
  mutable at::Tensor keep_;  // [N] 1 - rate, on the device of the last input
};

// [B, N*C, ...] stacked -> [N, B, C*...] model-major; model i's features are
// in the order a single model's flatten(1) gives.
at::Tensor stacked_to_model_major(const at::Tensor& x, int64_t models);

}  // namespace colo::fuse
