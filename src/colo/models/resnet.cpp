#include "colo/models/resnet.h"

#include <cmath>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "colo/core/error.h"

namespace colo::models {
namespace {

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .bias(false));
}

// A residual block as resnet_block_plan lays it out.
class ResidualBlock : public torch::nn::Module {
 public:
  ResidualBlock(int64_t in, int64_t planes, int64_t stride, bool bottleneck) {
    BlockPlan plan = resnet_block_plan(in, planes, stride, bottleneck);
    for (const BlockConv& c : plan.convs) add_conv(c.in, c.out, c.kernel, c.stride);
    if (plan.shortcut) {
      shortcut_conv_ = register_module("shortcut_conv", conv(in, plan.out, 1, stride));
      shortcut_bn_ = register_module("shortcut_bn", torch::nn::BatchNorm2d(plan.out));
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
    convs_.push_back(register_module("conv" + index, conv(in, out, kernel, stride)));
    bns_.push_back(register_module("bn" + index, torch::nn::BatchNorm2d(out)));
  }

  std::vector<torch::nn::Conv2d> convs_;
  std::vector<torch::nn::BatchNorm2d> bns_;
  torch::nn::Conv2d shortcut_conv_{nullptr};
  torch::nn::BatchNorm2d shortcut_bn_{nullptr};
};

class ResNet : public Classifier {
 public:
  ResNet(int64_t channels, int64_t classes, const std::vector<int64_t>& blocks, bool bottleneck,
         double width) {
    auto scaled = [&](int64_t c) { return resnet_scaled_channels(c, width); };
    int64_t in = scaled(64);
    stem_conv_ = register_module("stem_conv", conv(channels, in, 3, 1));
    stem_bn_ = register_module("stem_bn", torch::nn::BatchNorm2d(in));
    const int64_t planes[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      for (int64_t b = 0; b < blocks[stage]; ++b) {
        int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        auto block = std::make_shared<ResidualBlock>(in, scaled(planes[stage]), stride, bottleneck);
        blocks_.push_back(register_module(
            "layer" + std::to_string(stage + 1) + "_" + std::to_string(b), block));
        in = scaled(planes[stage]) * (bottleneck ? 4 : 1);
      }
    }
    head_ = register_module("head", torch::nn::Linear(in, classes));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    at::Tensor x = at::relu(stem_bn_->forward(stem_conv_->forward(inputs)));
    for (auto& block : blocks_) x = block->forward(x);
    x = at::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return head_->forward(x);
  }

 private:
  torch::nn::Conv2d stem_conv_{nullptr};
  torch::nn::BatchNorm2d stem_bn_{nullptr};
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  torch::nn::Linear head_{nullptr};
};

}  // namespace

BlockPlan resnet_block_plan(int64_t in, int64_t planes, int64_t stride, bool bottleneck) {
  BlockPlan plan;
  plan.out = bottleneck ? planes * 4 : planes;
  if (bottleneck) {
    plan.convs = {{in, planes, 1, 1}, {planes, planes, 3, stride}, {planes, plan.out, 1, 1}};
  } else {
    plan.convs = {{in, planes, 3, stride}, {planes, plan.out, 3, 1}};
  }
  plan.shortcut = stride != 1 || in != plan.out;
  return plan;
}

std::vector<int64_t> resnet_stage_blocks(int64_t depth) {
  return depth == 18 ? std::vector<int64_t>{2, 2, 2, 2} : std::vector<int64_t>{3, 4, 6, 3};
}

int64_t resnet_scaled_channels(int64_t planes, double width) {
  return std::max<int64_t>(1, std::lround(planes * width));
}

ClassifierPtr build_resnet(const ModelSpec& spec, const data::InputShape& shape) {
  if (shape.tokens || shape.sample_shape.size() != 3) {
    throw InputError(spec.source, "model.name", "resnet needs image data [channels, height, width]");
  }
  return std::make_shared<ResNet>(shape.sample_shape[0], shape.classes,
                                  resnet_stage_blocks(spec.depth), spec.depth == 50,
                                  spec.width);
}

}  // namespace colo::models
