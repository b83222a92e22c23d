#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/fuse/fused_layers.h"
#include "colo/fuse/fused_models.h"
#include "colo/models/activation.h"

namespace colo::fuse {
namespace {

class FusedMlp : public FusedClassifier {
 public:
  FusedMlp(int64_t models, int64_t in_features, const std::vector<int64_t>& widths,
           int64_t classes, models::Activation activation, std::vector<double> dropout)
      : FusedClassifier(models), activation_(activation), dropout_(std::move(dropout)) {
    int64_t previous = in_features;
    for (size_t i = 0; i < widths.size(); ++i) {
      hidden_.push_back(register_module("hidden" + std::to_string(i),
                                        std::make_shared<FusedLinear>(models, previous, widths[i])));
      previous = widths[i];
    }
    head_ = register_module("head", std::make_shared<FusedLinear>(models, previous, classes));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    at::Tensor flat = inputs.flatten(1);
    at::Tensor x;
    for (size_t i = 0; i < hidden_.size(); ++i) {
      x = i == 0 ? hidden_[i]->forward_shared(flat) : hidden_[i]->forward(x);
      x = dropout_.forward(models::apply_activation(activation_, x), is_training());
    }
    return x.defined() ? head_->forward(x) : head_->forward_shared(flat);
  }

 private:
  models::Activation activation_;
  FusedDropout dropout_;
  std::vector<std::shared_ptr<FusedLinear>> hidden_;
  std::shared_ptr<FusedLinear> head_;
};

}  // namespace

FusedClassifierPtr build_fused_mlp(const std::vector<models::ModelSpec>& specs,
                                   const data::InputShape& shape) {
  const models::ModelSpec& first = specs.front();
  if (shape.tokens) throw InputError(first.source, "model.name", "mlp takes feature or image data, not tokens");
  int64_t in_features = 1;
  for (int64_t size : shape.sample_shape) in_features *= size;
  std::vector<double> dropout;
  for (const auto& spec : specs) dropout.push_back(spec.dropout);
  return std::make_shared<FusedMlp>(static_cast<int64_t>(specs.size()), in_features, first.widths,
                                    shape.classes, models::activation_from_name(first.activation),
                                    std::move(dropout));
}

}  // namespace colo::fuse
