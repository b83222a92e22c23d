#include "colo/fuse/cuda/relu_max_pool_kernels.h"
#include "colo/fuse/cuda/tile_dispatch.cuh"

namespace colo::fuse::cuda {
namespace {

constexpr int kThreads = 256;
constexpr uint8_t kNoGradient = 4;

// One thread per output element.
__global__ void forward_kernel(const float* __restrict__ x, float* __restrict__ y, uint8_t* __restrict__ winner,
                               int64_t outputs, int height, int width) {
  const int ho = height / 2, wo = width / 2;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < outputs;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = o / (ho * wo);
    const int oy = static_cast<int>(o / wo % ho), ox = static_cast<int>(o % wo);
    const float* top = x + (plane * height + 2 * oy) * width + 2 * ox;
    const float window[4] = {top[0], top[1], top[width], top[width + 1]};
    float best = -INFINITY;
    int k = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float r = isnan(window[i]) ? window[i] : fmaxf(window[i], 0.f);  // relu keeps NaN
      if (r > best || isnan(r)) best = r, k = i;
    }
    y[o] = best;
    winner[o] = best > 0.f ? static_cast<uint8_t>(k) : kNoGradient;
  }
}

__global__ void backward_kernel(const float* __restrict__ dy, const uint8_t* __restrict__ winner,
                                float* __restrict__ dx, int64_t outputs, int height, int width) {
  const int ho = height / 2, wo = width / 2;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < outputs;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = o / (ho * wo);
    const int oy = static_cast<int>(o / wo % ho), ox = static_cast<int>(o % wo);
    float* top = dx + (plane * height + 2 * oy) * width + 2 * ox;
    const float g = dy[o];
    const uint8_t k = winner[o];
    top[0] = k == 0 ? g : 0.f;
    top[1] = k == 1 ? g : 0.f;
    top[width] = k == 2 ? g : 0.f;
    top[width + 1] = k == 3 ? g : 0.f;
  }
}

unsigned blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

}  // namespace

void relu_max_pool2x2_forward(const float* x, float* y, uint8_t* winner, int64_t planes, int64_t height,
                              int64_t width, void* stream) {
  const int64_t outputs = planes * (height / 2) * (width / 2);
  if (outputs == 0) return;
  forward_kernel<<<blocks_for(outputs), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, y, winner, outputs, static_cast<int>(height), static_cast<int>(width));
  check_launch("relu + max pool forward");
}

void relu_max_pool2x2_backward(const float* dy, const uint8_t* winner, float* dx, int64_t planes, int64_t height,
                               int64_t width, void* stream) {
  const int64_t outputs = planes * (height / 2) * (width / 2);
  if (outputs == 0) return;
  backward_kernel<<<blocks_for(outputs), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      dy, winner, dx, outputs, static_cast<int>(height), static_cast<int>(width));
  check_launch("relu + max pool backward");
}

}  // namespace colo::fuse::cuda
