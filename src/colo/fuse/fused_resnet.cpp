#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/fuse/fused_layers.h"
#include "colo/fuse/fused_models.h"
#include "colo/models/resnet.h"

namespace colo::fuse {
namespace {

std::shared_ptr<FusedConv2d> conv(int64_t models, int64_t in, int64_t out, int64_t kernel,
                                  int64_t stride) {
  return std::make_shared<FusedConv2d>(models, in, out, kernel, stride, kernel / 2, false);
}

// The fused twin of resnet.cpp's ResidualBlock, with the same names.
class FusedResidualBlock : public torch::nn::Module {
 public:
  FusedResidualBlock(int64_t models, int64_t in, int64_t planes, int64_t stride, bool bottleneck)
      : models_(models) {
    models::BlockPlan plan = models::resnet_block_plan(in, planes, stride, bottleneck);
    for (const models::BlockConv& c : plan.convs) add_conv(c.in, c.out, c.kernel, c.stride);
    if (plan.shortcut) {
      shortcut_conv_ = register_module("shortcut_conv", conv(models, in, plan.out, 1, stride));
      shortcut_bn_ = register_module("shortcut_bn", std::make_shared<FusedBatchNorm2d>(models, plan.out));
    }
  }

  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = x;
    for (size_t i = 0; i < convs_.size(); ++i) {
      y = bns_[i]->forward(convs_[i]->forward(y));
      if (i + 1 < convs_.size()) y = at::relu(y);
    }
    at::Tensor skip = shortcut_conv_ ? shortcut_bn_->forward(shortcut_conv_->forward(x)) : x;
    return at::relu(y + skip);
  }

 private:
  void add_conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
    std::string index = std::to_string(convs_.size() + 1);
    convs_.push_back(register_module("conv" + index, conv(models_, in, out, kernel, stride)));
    bns_.push_back(register_module("bn" + index, std::make_shared<FusedBatchNorm2d>(models_, out)));
  }

  int64_t models_;
  std::vector<std::shared_ptr<FusedConv2d>> convs_;
  std::vector<std::shared_ptr<FusedBatchNorm2d>> bns_;
  std::shared_ptr<FusedConv2d> shortcut_conv_;
  std::shared_ptr<FusedBatchNorm2d> shortcut_bn_;
};

class FusedResNet : public FusedClassifier {
 public:
  FusedResNet(int64_t models, int64_t channels, int64_t classes, int64_t depth, double width)
      : FusedClassifier(models) {
    bool bottleneck = depth == 50;
    auto blocks = models::resnet_stage_blocks(depth);
    int64_t in = models::resnet_scaled_channels(64, width);
    stem_conv_ = register_module("stem_conv", conv(models, channels, in, 3, 1));
    stem_bn_ = register_module("stem_bn", std::make_shared<FusedBatchNorm2d>(models, in));
    const int64_t planes[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      int64_t scaled = models::resnet_scaled_channels(planes[stage], width);
      for (int64_t b = 0; b < blocks[stage]; ++b) {
        int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        blocks_.push_back(register_module(
            "layer" + std::to_string(stage + 1) + "_" + std::to_string(b),
            std::make_shared<FusedResidualBlock>(models, in, scaled, stride, bottleneck)));
        in = scaled * (bottleneck ? 4 : 1);
      }
    }
    head_ = register_module("head", std::make_shared<FusedLinear>(models, in, classes));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    at::Tensor x = at::relu(stem_bn_->forward(stem_conv_->forward_shared(inputs)));
    for (auto& block : blocks_) x = block->forward(x);
    x = at::adaptive_avg_pool2d(x, {1, 1});
    return head_->forward(stacked_to_model_major(x, models()));
  }

 private:
  std::shared_ptr<FusedConv2d> stem_conv_;
  std::shared_ptr<FusedBatchNorm2d> stem_bn_;
  std::vector<std::shared_ptr<FusedResidualBlock>> blocks_;
  std::shared_ptr<FusedLinear> head_;
};

}  // namespace

FusedClassifierPtr build_fused_resnet(const std::vector<models::ModelSpec>& specs,
                                      const data::InputShape& shape) {
  const models::ModelSpec& first = specs.front();
  if (shape.tokens || shape.sample_shape.size() != 3) {
    throw InputError(first.source, "model.name", "resnet needs image data [channels, height, width]");
  }
  return std::make_shared<FusedResNet>(static_cast<int64_t>(specs.size()), shape.sample_shape[0],
                                       shape.classes, first.depth, first.width);
}

}  // namespace colo::fuse
