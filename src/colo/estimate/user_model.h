#pragma once
// Estimates for models colo does not build itself: a user's PyTorch module
// (through the Python package's colo._core) or a TorchScript file. The model
// is described by how to run its training loss; the analytical estimator
// then does what it does for colo's own specs: records the autograd graph at
// two small batches, replays the step through the allocator model, and adds
// cuDNN workspaces and the device's context.

#include <cstdint>
#include <string>

#include "colo/estimate/device_profile.h"
#include "colo/estimate/estimator.h"
#include "colo/estimate/job_model.h"
#include "colo/train/optimizer.h"

namespace colo::estimate {

// A model as the estimator runs it. `loss` gets a synthetic batch made from
// `input` (float, or int64 tokens in [0, vocab)) and labels in
// [0, input.classes) (0 classes: all labels 0), and returns a scalar loss
// whose autograd graph reaches the trainable parameters.
struct UserModel {
  TrainingMode set_mode;
  LossOf loss;
  data::InputShape input;
  std::string name = "user";  // the key of device calibrations (none for "user")
  // Bytes of every parameter and buffer the model puts on the GPU (frozen
  // ones and BatchNorm statistics too), each in the allocator's 512-byte
  // blocks; 0 when the caller counts them itself (colo.estimate does). The
  // recorded graph holds only the trainable parameters the forward reaches.
  int64_t resident_bytes = 0;
};

// How the user trains it.
struct UserTraining {
  int64_t batch_size = 32;
  int64_t eval_batch_size = 0;  // 0: no evaluation pass
  train::OptimizerSpec optimizer;
  // How torch.optim runs the step: "single" (a loop over the parameters:
  // torch 1.x, LibTorch), "foreach" (torch 2's default on CUDA) or "fused"
  // (one kernel, no temporaries).
  std::string optimizer_implementation = "single";
  bool keeps_output = true;     // the loop holds the model's output until the step ends
  bool keeps_gradients = false; // zero_grad(set_to_none=False): the gradients are never freed
  int accumulation_steps = 1;   // micro-batches per optimiser step (see StepConfig)
  bool zero_grad_before_forward = false;  // see StepConfig
  std::vector<int64_t> resident_allocations;  // see StepConfig (the model's, in .to(device)'s order)
};

// The optimiser's per-parameter state and temporaries in `step`, as colo's
// trainer and torch.optim's single-tensor loop keep them, or as torch.optim's
// `implementation` ("single", "foreach" or "fused", see UserTraining) does.
// Throws std::invalid_argument for another implementation.
void set_optimizer_footprint(const train::OptimizerSpec& optimizer, StepConfig& step,
                             const std::string& implementation = "single");

// Records `model`'s graph and describes the job. Throws std::invalid_argument
// for a batch size under 1 and std::runtime_error naming the problem when the
// model cannot be run or followed (its loss raised, has no graph, or its
// graph changes with the batch size).
JobModel describe_user_job(const UserModel& model, const UserTraining& training);

// The analytical estimate of `model` trained as `training` says, on the
// device `profile` describes. Throws as describe_user_job does.
MemoryEstimate estimate_user_model(const UserModel& model, const UserTraining& training,
                                   const DeviceProfile& profile = default_device_profile());

}  // namespace colo::estimate
