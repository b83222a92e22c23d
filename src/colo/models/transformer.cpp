#include "colo/models/transformer.h"

#include <cmath>

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "colo/core/error.h"

namespace colo::models {
namespace {

// Pre-norm encoder block: x + Attention(LN(x)), then x + FF(LN(x)).
class EncoderBlock : public torch::nn::Module {
 public:
  EncoderBlock(int64_t d_model, int64_t heads, int64_t ff_dim, double dropout)
      : heads_(heads), dropout_(dropout) {
    norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
    qkv_ = register_module("qkv", torch::nn::Linear(d_model, 3 * d_model));
    proj_ = register_module("proj", torch::nn::Linear(d_model, d_model));
    norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
    ff1_ = register_module("ff1", torch::nn::Linear(d_model, ff_dim));
    ff2_ = register_module("ff2", torch::nn::Linear(ff_dim, d_model));
  }

  at::Tensor forward(const at::Tensor& x) {
    int64_t b = x.size(0), t = x.size(1), d = x.size(2), hd = d / heads_;
    // [B, T, 3D] -> 3 x [B, H, T, hd]
    auto qkv = qkv_->forward(norm1_->forward(x)).view({b, t, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
    at::Tensor scores = at::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(double(hd));
    at::Tensor attention = at::softmax(scores, -1);
    if (dropout_ > 0) attention = at::dropout(attention, dropout_, is_training());
    at::Tensor mixed = at::matmul(attention, qkv[2]).transpose(1, 2).reshape({b, t, d});
    at::Tensor y = x + drop(proj_->forward(mixed));
    return y + drop(ff2_->forward(at::gelu(ff1_->forward(norm2_->forward(y)))));
  }

 private:
  at::Tensor drop(const at::Tensor& x) {
    return dropout_ > 0 ? at::dropout(x, dropout_, is_training()) : x;
  }

  int64_t heads_;
  double dropout_;
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr}, ff1_{nullptr}, ff2_{nullptr};
};

class Transformer : public Classifier {
 public:
  // Patch input when `vocab` is 0 (`patch_features` per token), token input otherwise.
  Transformer(const ModelSpec& spec, int64_t tokens, int64_t patch_features, int64_t vocab,
              int64_t classes)
      : patch_size_(spec.patch_size), dropout_(spec.dropout) {
    int64_t d = spec.d_model;
    if (vocab > 0) {
      token_embedding_ = register_module("token_embedding", torch::nn::Embedding(vocab, d));
    } else {
      patch_embedding_ = register_module("patch_embedding", torch::nn::Linear(patch_features, d));
    }
    position_ = register_parameter("position", at::randn({1, tokens, d}) * 0.02);
    int64_t ff = spec.ff_dim > 0 ? spec.ff_dim : 4 * d;
    for (int64_t i = 0; i < spec.layers; ++i) {
      blocks_.push_back(register_module("block" + std::to_string(i),
                                        std::make_shared<EncoderBlock>(d, spec.heads, ff, spec.dropout)));
    }
    norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    head_ = register_module("head", torch::nn::Linear(d, classes));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    at::Tensor x;
    if (token_embedding_) {
      x = token_embedding_->forward(inputs);
    } else {
      x = patch_embedding_->forward(image_patches(inputs, patch_size_));
    }
    x = x + position_;
    if (dropout_ > 0) x = at::dropout(x, dropout_, is_training());
    for (auto& block : blocks_) x = block->forward(x);
    return head_->forward(norm_->forward(x).mean(1));
  }

 private:
  int64_t patch_size_;
  double dropout_;
  torch::nn::Embedding token_embedding_{nullptr};
  torch::nn::Linear patch_embedding_{nullptr};
  at::Tensor position_;
  std::vector<std::shared_ptr<EncoderBlock>> blocks_;
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};

}  // namespace

at::Tensor image_patches(const at::Tensor& images, int64_t patch_size) {
  int64_t b = images.size(0), c = images.size(1), p = patch_size;
  // [B, C, H, W] -> [B, H/p, W/p, C, p, p] -> [B, T, C*p*p]
  return images.unfold(2, p, p).unfold(3, p, p).permute({0, 2, 3, 1, 4, 5}).reshape({b, -1, c * p * p});
}

ClassifierPtr build_transformer(const ModelSpec& spec, const data::InputShape& shape) {
  if (shape.tokens) {
    return std::make_shared<Transformer>(spec, shape.sample_shape[0], 0, shape.vocab, shape.classes);
  }
  if (shape.sample_shape.size() != 3) {
    throw InputError(spec.source, "model.name",
                     "transformer needs image data [channels, height, width] or token data");
  }
  int64_t c = shape.sample_shape[0], h = shape.sample_shape[1], w = shape.sample_shape[2];
  int64_t p = spec.patch_size;
  if (h % p != 0 || w % p != 0) {
    throw InputError(spec.source, "model.patch_size",
                     "expected a divisor of the image size " + std::to_string(h) + "x" +
                         std::to_string(w) + ", got " + std::to_string(p));
  }
  return std::make_shared<Transformer>(spec, (h / p) * (w / p), c * p * p, 0, shape.classes);
}

}  // namespace colo::models
