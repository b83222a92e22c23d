#include "colo/models/mlp.h"

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "colo/core/error.h"
#include "colo/models/activation.h"

namespace colo::models {
namespace {

class Mlp : public Classifier {
 public:
  Mlp(int64_t in_features, const std::vector<int64_t>& widths, int64_t classes,
      Activation activation, double dropout)
      : activation_(activation), dropout_(dropout) {
    int64_t previous = in_features;
    for (size_t i = 0; i < widths.size(); ++i) {
      hidden_.push_back(register_module("hidden" + std::to_string(i),
                                        torch::nn::Linear(previous, widths[i])));
      previous = widths[i];
    }
    head_ = register_module("head", torch::nn::Linear(previous, classes));
  }

  at::Tensor forward(const at::Tensor& inputs) override {
    at::Tensor x = inputs.flatten(1);
    for (auto& layer : hidden_) {
      x = apply_activation(activation_, layer->forward(x));
      if (dropout_ > 0) x = at::dropout(x, dropout_, is_training());
    }
    return head_->forward(x);
  }

 private:
  Activation activation_;
  double dropout_;
  std::vector<torch::nn::Linear> hidden_;
  torch::nn::Linear head_{nullptr};
};

}  // namespace

ClassifierPtr build_mlp(const ModelSpec& spec, const data::InputShape& shape) {
  if (shape.tokens) throw InputError(spec.source, "model.name", "mlp takes feature or image data, not tokens");
  int64_t in_features = 1;
  for (int64_t size : shape.sample_shape) in_features *= size;
  return std::make_shared<Mlp>(in_features, spec.widths, shape.classes,
                               activation_from_name(spec.activation), spec.dropout);
}

}  // namespace colo::models
