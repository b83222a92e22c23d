#include "colo/fuse/cuda/optimizer_kernels.h"

namespace colo::fuse::cuda {
namespace {

constexpr int kThreads = 256;

// The tensor of `launch` that block `block` works on.
__device__ int tensor_of_block(const OptimizerLaunch& launch, int64_t block) {
  int k = 0;
  while (k + 1 < launch.count && block >= launch.tensors[k + 1].first_block) ++k;
  return k;
}

// The same operations, in the same order, as FusedOptimizer::sgd_update and
// adam_update (torch::optim's rules).
__global__ void optimizer_step_kernel(const OptimizerLaunch launch, const OptimizerStep s) {
  const OptimizerTensor t = launch.tensors[tensor_of_block(launch, blockIdx.x)];
  const int64_t begin = (blockIdx.x - t.first_block) * kOptimizerBlockElements;
  const int64_t end = begin + kOptimizerBlockElements < t.numel ? begin + kOptimizerBlockElements : t.numel;
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    const int64_t model = i / t.per_model;
    float p = t.param[i];
    float g = t.grad[i];
    const float lr = s.lr[model];
    if (s.kind == OptimizerKind::kSgd) {
      if (s.weight_decay) g = __fadd_rn(g, __fmul_rn(s.weight_decay_factor[model], p));
      if (s.momentum) {
        const float m = s.momentum_factor[model];
        const float buf = __fadd_rn(__fmul_rn(t.first[i], m), g);
        t.first[i] = buf;
        g = s.nesterov ? __fadd_rn(g, __fmul_rn(m, buf)) : buf;
      }
      t.param[i] = __fsub_rn(p, __fmul_rn(lr, g));
      continue;
    }
    if (s.weight_decay) {
      const float wd = s.weight_decay_factor[model];
      if (s.kind == OptimizerKind::kAdamW) {
        p = __fmul_rn(p, __fsub_rn(1.f, __fmul_rn(lr, wd)));
      } else {
        g = __fadd_rn(g, __fmul_rn(wd, p));
      }
    }
    const float b1 = s.beta1[model], b2 = s.beta2[model];
    const float m = __fadd_rn(__fmul_rn(t.first[i], b1), __fmul_rn(__fsub_rn(1.f, b1), g));
    const float v = __fadd_rn(__fmul_rn(t.second[i], b2), __fmul_rn(__fmul_rn(__fsub_rn(1.f, b2), g), g));
    t.first[i] = m;
    t.second[i] = v;
    const float denom = __fadd_rn(__fdiv_rn(sqrtf(v), s.sqrt_bias_correction2[model]), s.eps[model]);
    t.param[i] = __fsub_rn(p, __fmul_rn(s.step_size[model], __fdiv_rn(m, denom)));
  }
}

}  // namespace

void optimizer_step(const OptimizerLaunch& launch, const OptimizerStep& step, void* stream) {
  if (launch.blocks == 0) return;
  optimizer_step_kernel<<<static_cast<unsigned>(launch.blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      launch, step);
}

}  // namespace colo::fuse::cuda
