#pragma once
// colo's multi-tensor optimiser step for fused arrays: SGD, Adam and AdamW
// over many float32 parameters in a few launches, each element read and
// written once, every hyper-parameter per model, with the arithmetic of
// FusedOptimizer's ATen path (fused_optimizer.cpp). Plain C++: shared by nvcc
// and the host compiler; the launches are planned on the host
// (optimizer_plan.cpp) and passed by value, so a step allocates nothing and
// can be captured in a CUDA graph.

#include <cstdint>
#include <vector>

namespace colo::fuse::cuda {

// One parameter [N, ...] whose memory is dense with the model outermost:
// model k owns elements [k * per_model, (k + 1) * per_model) of every array.
// The gradient and the moments share the parameter's layout; `first` and
// `second` are null where the optimiser keeps no such state.
struct OptimizerTensor {
  float* param = nullptr;
  const float* grad = nullptr;
  float* first = nullptr;   // SGD momentum buffer, Adam exp_avg
  float* second = nullptr;  // Adam exp_avg_sq
  int64_t numel = 0;
  int64_t per_model = 0;
  int64_t first_block = 0;  // the launch's first block that works on it (set by the plan)
};

// Elements one block updates, and tensors one launch carries in its
// argument (kernel arguments are limited to 4 KB).
inline constexpr int64_t kOptimizerBlockElements = 8192;
inline constexpr int kOptimizerTensorsPerLaunch = 24;

struct OptimizerLaunch {
  OptimizerTensor tensors[kOptimizerTensorsPerLaunch];
  int count = 0;
  int64_t blocks = 0;
};

// Groups `tensors` (numel > 0) into launches, in order, and numbers each
// one's blocks.
std::vector<OptimizerLaunch> plan_optimizer_launches(const std::vector<OptimizerTensor>& tensors);

enum class OptimizerKind : int { kSgd, kAdam, kAdamW };

// One step's rule and its per-model device arrays [N] (float32). SGD reads
// lr, momentum and weight_decay; Adam and AdamW read lr, weight_decay,
// beta1, beta2, eps, step_size (lr / (1 - beta1^t)) and
// sqrt_bias_correction2 (sqrt(1 - beta2^t)). Unused pointers may be null.
struct OptimizerStep {
  OptimizerKind kind = OptimizerKind::kSgd;
  bool weight_decay = false, momentum = false, nesterov = false;
  const float* lr = nullptr;
  const float* momentum_factor = nullptr;
  const float* weight_decay_factor = nullptr;
  const float* beta1 = nullptr;
  const float* beta2 = nullptr;
  const float* eps = nullptr;
  const float* step_size = nullptr;
  const float* sqrt_bias_correction2 = nullptr;
};

// Applies `step` to every tensor of `launch` on `stream` (a cudaStream_t).
void optimizer_step(const OptimizerLaunch& launch, const OptimizerStep& step, void* stream);

}  // namespace colo::fuse::cuda
