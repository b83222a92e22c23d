#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/fuse/fused_layers.h"
#include "colo/fuse/fused_models.h"
#include "colo/models/transformer.h"

namespace colo::fuse {
namespace {

// The fused twin of transformer.cpp's pre-norm EncoderBlock, same names.
class FusedEncoderBlock : public torch::nn::Module {
 public:
  FusedEncoderBlock(int64_t models, int64_t d_model, int64_t heads, int64_t ff_dim,
                    const std::vector<double>& dropout)
      : heads_(heads), dropout_(dropout) {
    norm1_ = register_module("norm1", std::make_shared<FusedLayerNorm>(models, d_model));
    qkv_ = register_module("qkv", std::make_shared<FusedLinear>(models, d_model, 3 * d_model));
    proj_ = register_module("proj", std::make_shared<FusedLinear>(models, d_model, d_model));
    norm2_ = register_module("norm2", std::make_shared<FusedLayerNorm>(models, d_model));
    ff1_ = register_module("ff1", std::make_shared<FusedLinear>(models, d_model, ff_dim));
    ff2_ = register_module("ff2", std::make_shared<FusedLinear>(models, ff_dim, d_model));
  }

  // x [N, B, T, D]
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor mixed = fused_self_attention(qkv_->forward(norm1_->forward(x)), heads_, dropout_, is_training());
    at::Tensor y = x + dropout_.forward(proj_->forward(mixed), is_training());
    at::Tensor ff = ff2_->forward(at::gelu(ff1_->forward(norm2_->forward(y))));
    return y + dropout_.forward(ff, is_training());
  }

 private:
  int64_t heads_;
  FusedDropout dropout_;
  std::shared_ptr<FusedLayerNorm> norm1_, norm2_;
  std::shared_ptr<FusedLinear> qkv_, proj_, ff1_, ff2_;
};

class FusedTransformer : public FusedClassifier {
 public:
  FusedTransformer(int64_t models, const models::ModelSpec& spec, const std::vector<double>& dropout,
                   int64_t tokens, int64_t patch_features, int64_t vocab, int64_t classes)
      : FusedClassifier(models), patch_size_(spec.patch_size), dropout_(dropout) {
    int64_t d = spec.d_model;
    if (vocab > 0) {
      token_embedding_ = register_module("token_embedding", std::make_shared<FusedEmbedding>(models, vocab, d));
    } else {
      patch_embedding_ = register_module("patch_embedding", std::make_shared<FusedLinear>(models, patch_features, d));
    }
    position_ = register_parameter("position", at::empty({models, 1, tokens, d}));
    int64_t ff = spec.ff_dim > 0 ? spec.ff_dim : 4 * d;
    for (int64_t i = 0; i < spec.layers; ++i) {
      blocks_.push_back(register_module("block" + std::to_string(i),
                                        std::make_shared<FusedEncoderBlock>(models, d, spec.heads, ff, dropout)));
    }
    norm_ = register_module("norm", std::make_shared<FusedLayerNorm>(models, d));
    head_ = register_module("head", std::make_shared<FusedLinear>(models, d, classes));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    at::Tensor x;
    if (token_embedding_) {
      x = token_embedding_->forward(inputs);
    } else {
      x = patch_embedding_->forward_shared(models::image_patches(inputs, patch_size_));
    }
    x = dropout_.forward(x + position_, is_training());  // [N, B, T, D]
    for (auto& block : blocks_) x = block->forward(x);
    return head_->forward(norm_->forward(x).mean(2));
  }

 private:
  int64_t patch_size_;
  FusedDropout dropout_;
  std::shared_ptr<FusedEmbedding> token_embedding_;
  std::shared_ptr<FusedLinear> patch_embedding_;
  at::Tensor position_;
  std::vector<std::shared_ptr<FusedEncoderBlock>> blocks_;
  std::shared_ptr<FusedLayerNorm> norm_;
  std::shared_ptr<FusedLinear> head_;
};

}  // namespace

FusedClassifierPtr build_fused_transformer(const std::vector<models::ModelSpec>& specs,
                                           const data::InputShape& shape) {
  const models::ModelSpec& first = specs.front();
  std::vector<double> dropout;
  for (const auto& spec : specs) dropout.push_back(spec.dropout);
  auto models = static_cast<int64_t>(specs.size());
  if (shape.tokens) {
    return std::make_shared<FusedTransformer>(models, first, dropout, shape.sample_shape[0], 0,
                                              shape.vocab, shape.classes);
  }
  if (shape.sample_shape.size() != 3 || shape.sample_shape[1] % first.patch_size != 0 ||
      shape.sample_shape[2] % first.patch_size != 0) {
    throw InputError(first.source, "model.patch_size", "expected image data whose sides the patch size divides");
  }
  int64_t c = shape.sample_shape[0], p = first.patch_size;
  int64_t tokens = (shape.sample_shape[1] / p) * (shape.sample_shape[2] / p);
  return std::make_shared<FusedTransformer>(models, first, dropout, tokens, c * p * p, 0, shape.classes);
}

}  // namespace colo::fuse
