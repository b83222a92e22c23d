#include "colo/fuse/cuda/grouped_conv_kernels.h"

#include <cuda_runtime.h>

namespace colo::fuse::cuda {
namespace {

constexpr int kThreads = 256;

__host__ __device__ int64_t out_rows(const GroupedConvShape& s) { return s.height + 2 * s.padding - s.kernel + 1; }
__host__ __device__ int64_t out_cols(const GroupedConvShape& s) { return s.width + 2 * s.padding - s.kernel + 1; }

// The sizes a block works with, as 32-bit integers (64-bit integer
// arithmetic is emulated on the GPU; every tile is far below 2^31).
struct TileDims {
  int ho, wo, H, W, P, Ci, Co;
  __device__ explicit TileDims(const GroupedConvShape& s)
      : ho(static_cast<int>(out_rows(s))), wo(static_cast<int>(out_cols(s))), H(static_cast<int>(s.height)),
        W(static_cast<int>(s.width)), P(static_cast<int>(s.padding)), Ci(static_cast<int>(s.in_per_group)),
        Co(static_cast<int>(s.out_per_group)) {}
};

// The block's threads copy n floats from global to shared memory, coalesced.
__device__ void copy_to_shared(float* dst, const float* src, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// Every kernel below gives one block one slice of the problem that fits in
// shared memory: forward and input gradient one (sample, group) pair, the
// weight gradient one output channel over a chunk of the batch. The tiles are
// loaded once with coalesced reads; every multiply-add then reads shared
// memory only.

// y[b, g] = conv(x[b, g], w[g]) + bias[g]: tiles x[b, g] and w[g].
template <int K>
__global__ void forward_kernel(const float* __restrict__ x, const float* __restrict__ w,
                               const float* __restrict__ bias, float* __restrict__ y, GroupedConvShape s) {
  extern __shared__ float tile[];
  const TileDims d(s);
  const int ho = d.ho, wo = d.wo, H = d.H, W = d.W, P = d.P, Ci = d.Ci, Co = d.Co;
  const int64_t b = blockIdx.x / s.groups, g = blockIdx.x % s.groups;
  const int x_size = Ci * H * W, w_size = Co * Ci * K * K;
  float* xs = tile;
  float* ws = tile + x_size;
  const float* xg = x + (b * s.groups + g) * x_size;
  const float* wg = w + g * w_size;
  copy_to_shared(xs, xg, x_size);
  copy_to_shared(ws, wg, w_size);
  __syncthreads();
  float* yg = y + (b * s.groups + g) * s.out_per_group * ho * wo;
  const int outputs = Co * ho * wo;
  for (int o = threadIdx.x; o < outputs; o += blockDim.x) {
    const int co = o / (ho * wo), oy = (o / wo) % ho, ox = o % wo;
    float acc = bias ? bias[g * s.out_per_group + co] : 0.f;
    for (int ci = 0; ci < Ci; ++ci) {
      const float* xc = xs + ci * H * W;
      const float* wk = ws + (co * Ci + ci) * K * K;
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        const int iy = oy - P + kh;
        if (iy < 0 || iy >= H) continue;
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          const int ix = ox - P + kw;
          if (ix >= 0 && ix < W) acc += xc[iy * W + ix] * wk[kh * K + kw];
        }
      }
    }
    yg[o] = acc;
  }
}

// dx[b, g] from dy[b, g] and w[g]: tiles dy[b, g] and w[g].
template <int K>
__global__ void input_grad_kernel(const float* __restrict__ dy, const float* __restrict__ w,
                                  float* __restrict__ dx, GroupedConvShape s) {
  extern __shared__ float tile[];
  const TileDims d(s);
  const int ho = d.ho, wo = d.wo, H = d.H, W = d.W, P = d.P, Ci = d.Ci, Co = d.Co;
  const int64_t b = blockIdx.x / s.groups, g = blockIdx.x % s.groups;
  const int dy_size = Co * ho * wo, w_size = Co * Ci * K * K;
  float* dys = tile;
  float* ws = tile + dy_size;
  const float* dyg = dy + (b * s.groups + g) * dy_size;
  const float* wg = w + g * w_size;
  copy_to_shared(dys, dyg, dy_size);
  copy_to_shared(ws, wg, w_size);
  __syncthreads();
  const int inputs = Ci * H * W;
  float* dxg = dx + (b * s.groups + g) * inputs;
  for (int i = threadIdx.x; i < inputs; i += blockDim.x) {
    const int ci = i / (H * W), iy = (i / W) % H, ix = i % W;
    float acc = 0.f;
    for (int co = 0; co < Co; ++co) {
      const float* dyc = dys + co * ho * wo;
      const float* wk = ws + (co * Ci + ci) * K * K;
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        const int oy = iy + P - kh;
        if (oy < 0 || oy >= ho) continue;
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          const int ox = ix + P - kw;
          if (ox >= 0 && ox < wo) acc += dyc[oy * wo + ox] * wk[kh * K + kw];
        }
      }
    }
    dxg[i] = acc;
  }
}

// Partial dw[oc] (all in * K * K taps of one output channel) over the
// samples of one batch chunk (blockIdx.y): per sample, tiles x[b, g] and
// dy[b, oc]; thread t owns tap t. partial is [chunks, G*out, in*K*K].
template <int K>
__global__ void weight_grad_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                   float* __restrict__ partial, GroupedConvShape s, int64_t per_chunk) {
  extern __shared__ float tile[];
  const TileDims d(s);
  const int ho = d.ho, wo = d.wo, H = d.H, W = d.W, P = d.P, Ci = d.Ci;
  const int64_t oc = blockIdx.x, g = oc / s.out_per_group;
  const int x_size = Ci * H * W, dy_size = ho * wo;
  const int64_t channels_out = s.groups * s.out_per_group;
  float* xs = tile;
  float* dys = tile + x_size;
  const int taps = Ci * K * K;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};  // taps threadIdx.x + j * blockDim.x
  const int64_t first = blockIdx.y * per_chunk;
  const int64_t last = first + per_chunk < s.batch ? first + per_chunk : s.batch;
  for (int64_t b = first; b < last; ++b) {
    __syncthreads();
    const float* xg = x + (b * s.groups + g) * x_size;
    const float* dyc = dy + (b * channels_out + oc) * dy_size;
    copy_to_shared(xs, xg, x_size);
    copy_to_shared(dys, dyc, dy_size);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int t = threadIdx.x + j * blockDim.x;
      if (t >= taps) break;
      const int ci = t / (K * K), kh = (t / K) % K, kw = t % K;
      const float* xc = xs + ci * H * W;
      float sum = 0.f;
      for (int oy = 0; oy < ho; ++oy) {
        const int iy = oy - P + kh;
        if (iy < 0 || iy >= H) continue;
        for (int ox = 0; ox < wo; ++ox) {
          const int ix = ox - P + kw;
          if (ix >= 0 && ix < W) sum += dys[oy * wo + ox] * xc[iy * W + ix];
        }
      }
      acc[j] += sum;
    }
  }
  float* out = partial + (blockIdx.y * channels_out + oc) * taps;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int t = threadIdx.x + j * blockDim.x;
    if (t < taps) out[t] = acc[j];
  }
}

size_t floats(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

template <int K>
void launch_forward(const float* x, const float* w, const float* bias, float* y, const GroupedConvShape& s,
                    cudaStream_t stream) {
  size_t shared = floats(s.in_per_group * s.height * s.width + s.out_per_group * s.in_per_group * K * K);
  forward_kernel<K><<<static_cast<unsigned>(s.batch * s.groups), kThreads, shared, stream>>>(x, w, bias, y, s);
}

template <int K>
void launch_input_grad(const float* dy, const float* w, float* dx, const GroupedConvShape& s, cudaStream_t stream) {
  size_t shared = floats(s.out_per_group * out_rows(s) * out_cols(s) + s.out_per_group * s.in_per_group * K * K);
  input_grad_kernel<K><<<static_cast<unsigned>(s.batch * s.groups), kThreads, shared, stream>>>(dy, w, dx, s);
}

template <int K>
void launch_weight_grad(const float* dy, const float* x, float* partial, const GroupedConvShape& s,
                        cudaStream_t stream) {
  size_t shared = floats(s.in_per_group * s.height * s.width + out_rows(s) * out_cols(s));
  const int64_t chunks = grouped_conv_weight_grad_chunks(s);
  const int64_t per_chunk = (s.batch + chunks - 1) / chunks;
  dim3 grid(static_cast<unsigned>(s.groups * s.out_per_group), static_cast<unsigned>(chunks));
  weight_grad_kernel<K><<<grid, kThreads, shared, stream>>>(dy, x, partial, s, per_chunk);
}

}  // namespace

bool grouped_conv_shape_supported(const GroupedConvShape& s) {
  if (s.kernel != 3 && s.kernel != 5) return false;
  if (s.out_height() < 1 || s.out_width() < 1) return false;
  const int64_t weights = s.out_per_group * s.in_per_group * s.kernel * s.kernel;
  const int64_t x_tile = s.in_per_group * s.height * s.width;
  const int64_t dy_tile = s.out_per_group * s.out_height() * s.out_width();
  const int64_t limit = 48 * 1024 / static_cast<int64_t>(sizeof(float));
  return s.in_per_group * s.kernel * s.kernel <= 4 * kThreads && x_tile + weights <= limit &&
         dy_tile + weights <= limit && x_tile + s.out_height() * s.out_width() <= limit;
}

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

int64_t grouped_conv_weight_grad_chunks(const GroupedConvShape& s) {
  // About 8 samples per block, and never more chunks than samples.
  const int64_t chunks = (s.batch + 7) / 8;
  return chunks < 1 ? 1 : chunks;
}

void grouped_conv_weight_grad(const float* dy, const float* x, float* partial, const GroupedConvShape& s,
                              void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (s.kernel == 3) launch_weight_grad<3>(dy, x, partial, s, st);
  if (s.kernel == 5) launch_weight_grad<5>(dy, x, partial, s, st);
}

}  // namespace colo::fuse::cuda
