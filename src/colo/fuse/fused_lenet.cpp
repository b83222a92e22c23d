#include <ATen/ATen.h>

#include "colo/fuse/fused_layers.h"
#include "colo/fuse/fused_models.h"
#include "colo/fuse/relu_max_pool.h"
#include "colo/models/activation.h"
#include "colo/models/lenet.h"

namespace colo::fuse {
namespace {

class FusedLeNet : public FusedClassifier {
 public:
  FusedLeNet(int64_t models, const models::LenetGeometry& g, int64_t classes,
             models::Activation activation)
      : FusedClassifier(models), activation_(activation) {
    conv1_ = register_module("conv1", std::make_shared<FusedConv2d>(models, g.channels, 6, 5, 1,
                                                                    g.padding, true));
    conv2_ = register_module("conv2", std::make_shared<FusedConv2d>(models, 6, 16, 5, 1, 0, true));
    fc1_ = register_module("fc1", std::make_shared<FusedLinear>(models, g.flat, 120));
    fc2_ = register_module("fc2", std::make_shared<FusedLinear>(models, 120, 84));
    fc3_ = register_module("fc3", std::make_shared<FusedLinear>(models, 84, classes));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    using models::apply_activation;
    at::Tensor x = activate_and_pool(conv1_->forward_shared(inputs));
    x = activate_and_pool(conv2_->forward(x));
    x = apply_activation(activation_, fc1_->forward(stacked_to_model_major(x, models())));
    x = apply_activation(activation_, fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  at::Tensor activate_and_pool(const at::Tensor& x) {
    if (activation_ == models::Activation::kRelu) return relu_max_pool2x2(x, own_cuda_kernels());
    return at::max_pool2d(models::apply_activation(activation_, x), {2, 2});
  }

  models::Activation activation_;
  std::shared_ptr<FusedConv2d> conv1_, conv2_;
  std::shared_ptr<FusedLinear> fc1_, fc2_, fc3_;
};

}  // namespace

FusedClassifierPtr build_fused_lenet(const std::vector<models::ModelSpec>& specs,
                                     const data::InputShape& shape) {
  const models::ModelSpec& first = specs.front();
  return std::make_shared<FusedLeNet>(static_cast<int64_t>(specs.size()),
                                      models::lenet_geometry(first, shape), shape.classes,
                                      models::activation_from_name(first.activation));
}

}  // namespace colo::fuse
