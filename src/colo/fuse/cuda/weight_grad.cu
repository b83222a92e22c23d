// The weight gradient of a small-group convolution (conv_plan.h's
// WeightGradPlan): partial sums per batch chunk and row split, summed by the
// caller.

#include "colo/fuse/cuda/conv_plan.h"
#include "colo/fuse/cuda/grouped_conv_kernels.h"
#include "colo/fuse/cuda/tile_dispatch.cuh"

namespace colo::fuse::cuda {
namespace {

// Block (batch chunk, group, item slice). Per stage the block loads `stage`
// samples' zero-padded x tiles and dy tiles (zero beyond the last column and
// channel) into shared memory. A thread's item is (channel tile, ci, kh, row
// split); it accumulates dw[CO channels][ci][kh][all K taps] from OX-wide
// row segments of dy and x.
template <int K, int CO, int OX>
__global__ void __launch_bounds__(kBlockThreads)
    weight_grad_kernel(const float* __restrict__ dy, const float* __restrict__ x, float* __restrict__ partial,
                       WeightGradPlan p) {
  extern __shared__ float shared[];
  const int chunk = blockIdx.x, g = blockIdx.y;
  const int item = blockIdx.z * blockDim.x + threadIdx.x;
  const bool active = item < p.items();
  const int r = item % p.row_splits, kh = (item / p.row_splits) % K;
  const int ci = (item / (p.row_splits * K)) % p.cin, cob = item / (p.row_splits * K * p.cin);
  const int first = chunk * p.per_chunk, last = min(first + p.per_chunk, p.batch);
  const int xt = p.x_floats(), dt = p.dy_floats(), plane = p.hp * p.wp;
  float* xs = shared;
  float* dys = shared + p.stage * xt;
  const int64_t x_sample = static_cast<int64_t>(p.groups) * p.cin * p.h * p.w;
  const int64_t dy_sample = static_cast<int64_t>(p.groups) * p.cout * p.ho * p.wo;

  float acc[CO][K];
#pragma unroll
  for (int c = 0; c < CO; ++c) {
#pragma unroll
    for (int kw = 0; kw < K; ++kw) acc[c][kw] = 0.f;
  }
  for (int s0 = first; s0 < last; s0 += p.stage) {
    const int n = min(p.stage, last - s0);
    __syncthreads();
    const float* x_stage = x + static_cast<int64_t>(s0) * x_sample + static_cast<int64_t>(g) * p.cin * p.h * p.w;
    for (int i = threadIdx.x; i < n * xt; i += blockDim.x) {
      const int s = i / xt, c = (i % xt) / plane;
      const int iy = (i % plane) / p.wp - p.pad, ix = i % p.wp - p.pad;
      float v = 0.f;
      if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) v = x_stage[s * x_sample + (c * p.h + iy) * p.w + ix];
      xs[i] = v;
    }
    const float* dy_stage =
        dy + static_cast<int64_t>(s0) * dy_sample + static_cast<int64_t>(g) * p.cout * p.ho * p.wo;
    const int dy_plane = p.ho * p.dy_cols;
    for (int i = threadIdx.x; i < n * dt; i += blockDim.x) {
      const int s = i / dt, c = (i % dt) / dy_plane;
      const int oy = (i % dy_plane) / p.dy_cols, ox = i % p.dy_cols;
      float v = 0.f;
      if (c < p.cout && ox < p.wo) v = dy_stage[s * dy_sample + (c * p.ho + oy) * p.wo + ox];
      dys[i] = v;
    }
    __syncthreads();
    if (!active) continue;
    for (int s = 0; s < n; ++s) {
      const float* x_rows = xs + s * xt + (ci * p.hp + kh) * p.wp;
      const float* dy_rows = dys + s * dt + cob * CO * dy_plane;
      for (int oy = r; oy < p.ho; oy += p.row_splits) {
        for (int col = 0; col < p.col_tiles; ++col) {
          float xr[OX + K - 1];
          const float* row = x_rows + oy * p.wp + col * OX;
#pragma unroll
          for (int j = 0; j < OX + K - 1; ++j) xr[j] = row[j];
#pragma unroll
          for (int c = 0; c < CO; ++c) {
            const float* dr = dy_rows + c * dy_plane + oy * p.dy_cols + col * OX;
#pragma unroll
            for (int j = 0; j < OX; ++j) {
              const float d = dr[j];
#pragma unroll
              for (int kw = 0; kw < K; ++kw) acc[c][kw] = fmaf(d, xr[j + kw], acc[c][kw]);
            }
          }
        }
      }
    }
  }
  if (!active) return;
  const int64_t slice = static_cast<int64_t>(chunk) * p.row_splits + r;
  float* out = partial + (slice * p.groups * p.cout + static_cast<int64_t>(g) * p.cout) * p.cin * K * K +
               (ci * K + kh) * K;
#pragma unroll
  for (int c = 0; c < CO; ++c) {
    const int co = cob * CO + c;
    if (co >= p.cout) break;
#pragma unroll
    for (int kw = 0; kw < K; ++kw) out[co * p.cin * K * K + kw] = acc[c][kw];
  }
}

}  // namespace

void grouped_conv_weight_grad(const float* dy, const float* x, float* partial, const GroupedConvShape& s,
                              void* stream) {
  const WeightGradPlan p = plan_grouped_conv(s).weight_grad;
  dim3 grid(p.chunks, p.groups, p.item_blocks);
  const int threads = p.items() < kBlockThreads ? (p.items() + 31) / 32 * 32 : kBlockThreads;
  const size_t shared = static_cast<size_t>(p.shared_floats()) * sizeof(float);
  dispatch_tiles(p.kernel, p.co_tile, p.ox_tile, [&](auto k, auto co, auto ox) {
    weight_grad_kernel<decltype(k)::value, decltype(co)::value, decltype(ox)::value>
        <<<grid, threads, shared, static_cast<cudaStream_t>(stream)>>>(dy, x, partial, p);
  });
  check_launch("grouped conv weight gradient");
}

}  // namespace colo::fuse::cuda
