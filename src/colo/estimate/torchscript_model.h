#pragma once
// A TorchScript file (torch.jit.save) as a model the estimator can run, for
// people who export their models: no Python at run time.

#include <string>

#include "colo/estimate/user_model.h"

namespace colo::estimate {

// Loads `path`; its forward takes one batch of inputs shaped `input`
// (float, or int64 token ids when input.tokens) and returns logits, a tensor
// or a tuple/list whose first element is one, shaped (batch, classes) or
// (batch, ..., classes). The loss is cross entropy against class 0 over
// every position; the module runs without TorchScript's graph optimisation,
// as written. Throws InputError naming the file when it is missing or not
// TorchScript.
UserModel load_torchscript_model(const std::string& path, const data::InputShape& input);

// The loss colo trains user models with by default: cross entropy of
// `output` (batch, ..., classes) against class 0 at every position.
at::Tensor cross_entropy_against_class0(const at::Tensor& output);

}  // namespace colo::estimate
