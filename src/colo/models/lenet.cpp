#include "colo/models/lenet.h"

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "colo/core/error.h"
#include "colo/models/activation.h"

namespace colo::models {
namespace {

class LeNet : public Classifier {
 public:
  LeNet(int64_t channels, int64_t padding, int64_t flat, int64_t classes, Activation activation)
      : activation_(activation) {
    conv1_ = register_module("conv1", torch::nn::Conv2d(
                                          torch::nn::Conv2dOptions(channels, 6, 5).padding(padding)));
    conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)));
    fc1_ = register_module("fc1", torch::nn::Linear(flat, 120));
    fc2_ = register_module("fc2", torch::nn::Linear(120, 84));
    fc3_ = register_module("fc3", torch::nn::Linear(84, classes));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    at::Tensor x = at::max_pool2d(apply_activation(activation_, conv1_->forward(inputs)), {2, 2});
    x = at::max_pool2d(apply_activation(activation_, conv2_->forward(x)), {2, 2});
    x = apply_activation(activation_, fc1_->forward(x.flatten(1)));
    x = apply_activation(activation_, fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  Activation activation_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr}, fc3_{nullptr};
};

}  // namespace

LenetGeometry lenet_geometry(const ModelSpec& spec, const data::InputShape& shape) {
  if (shape.tokens || shape.sample_shape.size() != 3) {
    throw InputError(spec.source, "model.name", "lenet needs image data [channels, height, width]");
  }
  int64_t height = shape.sample_shape[1], width = shape.sample_shape[2];
  LenetGeometry geometry;
  geometry.channels = shape.sample_shape[0];
  // Classic LeNet-5 sees 32x32; smaller images (MNIST's 28x28) are padded by 2.
  geometry.padding = (height < 32 || width < 32) ? 2 : 0;
  auto side = [&](int64_t size) { return ((size + 2 * geometry.padding - 4) / 2 - 4) / 2; };
  if (side(height) < 1 || side(width) < 1) {
    throw InputError(spec.source, "model.name", "lenet needs images of at least 12x12");
  }
  geometry.flat = 16 * side(height) * side(width);
  return geometry;
}

ClassifierPtr build_lenet(const ModelSpec& spec, const data::InputShape& shape) {
  LenetGeometry g = lenet_geometry(spec, shape);
  return std::make_shared<LeNet>(g.channels, g.padding, g.flat, shape.classes,
                                 activation_from_name(spec.activation));
}

}  // namespace colo::models
