#include "colo/fuse/cuda/grouped_conv_kernels.h"

#include <cuda_runtime.h>

namespace colo::fuse::cuda {
namespace {

constexpr int kThreads = 256;

__host__ __device__ int64_t out_rows(const GroupedConvShape& s) { return s.height + 2 * s.padding - s.kernel + 1; }
__host__ __device__ int64_t out_cols(const GroupedConvShape& s) { return s.width + 2 * s.padding - s.kernel + 1; }

int blocks_for(int64_t elements) { return static_cast<int>((elements + kThreads - 1) / kThreads); }

// One thread per output element; consecutive threads take consecutive
// output columns, so input reads coalesce and a warp shares its weights.
template <int K>
__global__ void forward_kernel(const float* __restrict__ x, const float* __restrict__ w,
                               const float* __restrict__ bias, float* __restrict__ y, GroupedConvShape s) {
  const int64_t ho = out_rows(s), wo = out_cols(s);
  const int64_t channels_out = s.groups * s.out_per_group;
  const int64_t total = s.batch * channels_out * ho * wo;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ox = i % wo, oy = (i / wo) % ho, c = (i / (wo * ho)) % channels_out, b = i / (wo * ho * channels_out);
    const int64_t g = c / s.out_per_group;
    float acc = bias ? bias[c] : 0.f;
    const float* wc = w + c * s.in_per_group * K * K;
    const float* xg = x + (b * s.groups + g) * s.in_per_group * s.height * s.width;
    for (int64_t ci = 0; ci < s.in_per_group; ++ci) {
      const float* xc = xg + ci * s.height * s.width;
      const float* wk = wc + ci * K * K;
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        const int64_t iy = oy - s.padding + kh;
        if (iy < 0 || iy >= s.height) continue;
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          const int64_t ix = ox - s.padding + kw;
          if (ix < 0 || ix >= s.width) continue;
          acc += xc[iy * s.width + ix] * wk[kh * K + kw];
        }
      }
    }
    y[i] = acc;
  }
}

// One thread per input element: the sum over the outputs it fed.
template <int K>
__global__ void input_grad_kernel(const float* __restrict__ dy, const float* __restrict__ w,
                                  float* __restrict__ dx, GroupedConvShape s) {
  const int64_t ho = out_rows(s), wo = out_cols(s);
  const int64_t channels_in = s.groups * s.in_per_group;
  const int64_t total = s.batch * channels_in * s.height * s.width;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ix = i % s.width, iy = (i / s.width) % s.height;
    const int64_t c = (i / (s.width * s.height)) % channels_in, b = i / (s.width * s.height * channels_in);
    const int64_t g = c / s.in_per_group, ci = c % s.in_per_group;
    float acc = 0.f;
    for (int64_t co = 0; co < s.out_per_group; ++co) {
      const int64_t oc = g * s.out_per_group + co;
      const float* dyc = dy + (b * s.groups * s.out_per_group + oc) * ho * wo;
      const float* wk = w + (oc * s.in_per_group + ci) * K * K;
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        const int64_t oy = iy + s.padding - kh;
        if (oy < 0 || oy >= ho) continue;
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          const int64_t ox = ix + s.padding - kw;
          if (ox < 0 || ox >= wo) continue;
          acc += dyc[oy * wo + ox] * wk[kh * K + kw];
        }
      }
    }
    dx[i] = acc;
  }
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// One block per (output channel, input channel of its group): its threads
// split the batch and output positions, each keeping all K*K taps in
// registers, then the block sums them.
template <int K>
__global__ void weight_grad_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                   float* __restrict__ dw, GroupedConvShape s) {
  const int64_t ho = out_rows(s), wo = out_cols(s);
  const int64_t oc = blockIdx.x / s.in_per_group, ci = blockIdx.x % s.in_per_group;
  const int64_t g = oc / s.out_per_group;
  const int64_t channels_out = s.groups * s.out_per_group, channels_in = s.groups * s.in_per_group;
  float acc[K * K];
#pragma unroll
  for (int t = 0; t < K * K; ++t) acc[t] = 0.f;
  const int64_t positions = s.batch * ho * wo;
  for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
    const int64_t ox = p % wo, oy = (p / wo) % ho, b = p / (wo * ho);
    const float d = dy[((b * channels_out + oc) * ho + oy) * wo + ox];
    const float* xc = x + (b * channels_in + g * s.in_per_group + ci) * s.height * s.width;
#pragma unroll
    for (int kh = 0; kh < K; ++kh) {
      const int64_t iy = oy - s.padding + kh;
      const bool row_in = iy >= 0 && iy < s.height;
#pragma unroll
      for (int kw = 0; kw < K; ++kw) {
        const int64_t ix = ox - s.padding + kw;
        if (row_in && ix >= 0 && ix < s.width) acc[kh * K + kw] += d * xc[iy * s.width + ix];
      }
    }
  }
  __shared__ float partial[kThreads / 32][K * K];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int t = 0; t < K * K; ++t) {
    const float v = warp_sum(acc[t]);
    if (lane == 0) partial[warp][t] = v;
  }
  __syncthreads();
  if (threadIdx.x < K * K) {
    float sum = 0.f;
    for (int i = 0; i < kThreads / 32; ++i) sum += partial[i][threadIdx.x];
    dw[(oc * s.in_per_group + ci) * K * K + threadIdx.x] = sum;
  }
}

int grid_for(int64_t elements) {
  // Grid-stride loops: enough blocks to fill the GPU, never more than needed.
  const int64_t blocks = blocks_for(elements);
  return static_cast<int>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

template <int K>
void launch_forward(const float* x, const float* w, const float* bias, float* y, const GroupedConvShape& s,
                    cudaStream_t stream) {
  const int64_t total = s.batch * s.groups * s.out_per_group * out_rows(s) * out_cols(s);
  forward_kernel<K><<<grid_for(total), kThreads, 0, stream>>>(x, w, bias, y, s);
}

template <int K>
void launch_input_grad(const float* dy, const float* w, float* dx, const GroupedConvShape& s, cudaStream_t stream) {
  const int64_t total = s.batch * s.groups * s.in_per_group * s.height * s.width;
  input_grad_kernel<K><<<grid_for(total), kThreads, 0, stream>>>(dy, w, dx, s);
}

template <int K>
void launch_weight_grad(const float* dy, const float* x, float* dw, const GroupedConvShape& s, cudaStream_t stream) {
  const int64_t blocks = s.groups * s.out_per_group * s.in_per_group;
  weight_grad_kernel<K><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(dy, x, dw, s);
}

}  // namespace

bool grouped_conv_kernel_size_supported(int64_t kernel) { return kernel == 3 || kernel == 5; }

void grouped_conv_forward(const float* x, const float* w, const float* bias, float* y, const GroupedConvShape& s,
                          void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (s.kernel == 3) launch_forward<3>(x, w, bias, y, s, st);
  if (s.kernel == 5) launch_forward<5>(x, w, bias, y, s, st);
}

void grouped_conv_input_grad(const float* dy, const float* w, float* dx, const GroupedConvShape& s, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (s.kernel == 3) launch_input_grad<3>(dy, w, dx, s, st);
  if (s.kernel == 5) launch_input_grad<5>(dy, w, dx, s, st);
}

void grouped_conv_weight_grad(const float* dy, const float* x, float* dw, const GroupedConvShape& s, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (s.kernel == 3) launch_weight_grad<3>(dy, x, dw, s, st);
  if (s.kernel == 5) launch_weight_grad<5>(dy, x, dw, s, st);
}

}  // namespace colo::fuse::cuda
