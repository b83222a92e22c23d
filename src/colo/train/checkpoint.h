#pragma once
// Checkpoints: model, optimiser, progress and RNG state in one file.

#include <cstdint>
#include <string>

#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace colo::train {

struct CheckpointState {
  int64_t epoch = 0;  // epochs completed
  int64_t step = 0;   // optimiser steps taken
};

// Writes `path` atomically (a crash leaves the previous checkpoint intact):
// parameters, buffers, optimiser state, `state` and LibTorch's CPU generator
// state, so a resumed CPU run continues exactly. Throws on I/O failure.
void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, const CheckpointState& state);

// Restores what save_checkpoint wrote into `model` and `optimizer` (tensors
// land on `device`). Throws InputError naming `path` when the file is
// unreadable or does not match the model.
CheckpointState load_checkpoint(const std::string& path, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, const c10::Device& device);

}  // namespace colo::train
