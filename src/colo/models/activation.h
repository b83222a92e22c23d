#pragma once
// Activation functions a spec may name.

#include <string>

#include <ATen/Tensor.h>

namespace colo::models {

enum class Activation { kRelu, kGelu, kTanh };

// "relu" | "gelu" | "tanh"; the spec parser validates the name first.
Activation activation_from_name(const std::string& name);

at::Tensor apply_activation(Activation activation, const at::Tensor& x);

}  // namespace colo::models
