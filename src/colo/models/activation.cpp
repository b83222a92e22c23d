#include "colo/models/activation.h"

#include <stdexcept>

#include <ATen/ATen.h>

namespace colo::models {

Activation activation_from_name(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "tanh") return Activation::kTanh;
  throw std::invalid_argument("unknown activation " + name);
}

at::Tensor apply_activation(Activation activation, const at::Tensor& x) {
  switch (activation) {
    case Activation::kRelu: return at::relu(x);
    case Activation::kGelu: return at::gelu(x);
    case Activation::kTanh: return at::tanh(x);
  }
  return x;
}

}  // namespace colo::models
