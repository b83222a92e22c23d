#pragma once
// SGD, Adam and AdamW over the parameters of a fused array, with every
// hyper-parameter a per-model tensor: model i is updated exactly as
// torch::optim would update it alone with its own OptimizerSpec.

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/Tensor.h>

#include "colo/train/optimizer.h"

namespace colo::fuse {

class FusedOptimizer {
 public:
  // `parameters`: every parameter of an array of N models (dimension 0 is the
  // model). `specs`: one per model, all naming the same optimiser (and, for
  // SGD, the same nesterov flag); throws std::invalid_argument otherwise.
  FusedOptimizer(std::vector<at::Tensor> parameters, std::vector<train::OptimizerSpec> specs);

  // Learning rates per step: `table` [steps, N]; step k uses row
  // min(k, steps - 1). Without a table every model keeps its spec's lr.
  void set_lr_table(const at::Tensor& table);

  // Every model's learning rate from now on (drops the lr table); no host
  // synchronisation.
  void set_learning_rate(double lr);

  // The optimiser's state, to read or overwrite in place: the first moments
  // (SGD momentum buffers or Adam's exp_avg) of every parameter where they
  // exist, then the second moments (Adam's exp_avg_sq), then the step
  // counter [1] (int64). Two optimisers built alike list alike tensors.
  std::vector<at::Tensor> state() const;

  // Sets every gradient to zero in place (allocating it the first time), so
  // gradients keep their addresses from step to step (CUDA-graph safe).
  void zero_grad();

  // One update of every model. Reads no value back to the host and allocates
  // nothing on the host, so it can be captured in a CUDA graph. On a CUDA
  // build, float32 CUDA parameters whose gradient and state share their
  // dense, model-outermost layout are updated by colo's multi-tensor kernel
  // (fuse/cuda/optimizer_kernels.h) in a few launches; the rest by ATen.
  void step();

  // How many parameters the last step() updated with colo's kernel.
  int64_t own_kernel_parameters() const { return own_kernel_parameters_; }

  // Optimiser steps taken so far (reads the device counter: synchronises).
  int64_t steps_taken() const;

  // A copy holding models `indices` only, over `parameters` of the compacted
  // array (see select_models in model_array.h).
  FusedOptimizer select(const std::vector<int64_t>& indices,
                        std::vector<at::Tensor> parameters) const;

  int64_t models() const { return static_cast<int64_t>(specs_.size()); }

 private:
  struct OwnKernelPlan;  // fused_optimizer.cpp

  at::Tensor per_model(double train::OptimizerSpec::*field) const;
  // The kernel's plan for the current gradients (rebuilt when one moves);
  // null where the kernel cannot run.
  const OwnKernelPlan* own_kernel_plan();
  void own_kernel_step(const OwnKernelPlan& plan, const at::Tensor& lr, const at::Tensor& step_size,
                       const at::Tensor& sqrt_bias_correction2);
  void sgd_update(size_t index, const at::Tensor& lr);
  void adam_update(size_t index, const at::Tensor& lr, const at::Tensor& step_size,
                   const at::Tensor& sqrt_bias_correction2);

  std::vector<at::Tensor> parameters_;
  std::vector<train::OptimizerSpec> specs_;
  std::string name_;
  bool nesterov_ = false;
  bool any_weight_decay_ = false;
  bool any_momentum_ = false;
  // [N] hyper-parameters on the parameters' device.
  at::Tensor lr_, momentum_, weight_decay_, beta1_, beta2_, eps_;
  at::Tensor lr_table_;   // [steps, N]
  at::Tensor step_;       // [1] int64: steps taken
  std::vector<at::Tensor> first_moment_;   // sgd: momentum buffer; adam: exp_avg
  std::vector<at::Tensor> second_moment_;  // adam: exp_avg_sq
  std::shared_ptr<OwnKernelPlan> own_plan_;
  int64_t own_kernel_parameters_ = 0;
};

}  // namespace colo::fuse
