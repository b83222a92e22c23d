// The weight gradient of a small-group convolution (conv_plan.h's
// WeightGradPlan): partial sums per batch chunk and row split, summed by the
// caller.

#include "colo/fuse/cuda/conv_plan.h"
#include "colo/fuse/cuda/grouped_conv_kernels.h"
#include "colo/fuse/cuda/tile_dispatch.cuh"
#include "colo/fuse/cuda/tile_loads.cuh"

namespace colo::fuse::cuda {
namespace {

// Block (batch chunk, group, item slice). Per stage the block loads `stage`
// samples' x and dy tiles into shared memory. A thread's item is (channel
// tile, ci, kh, row split); per output row segment it reads one x segment and
// CO dy segments and accumulates dw[CO channels][ci][kh][all K taps].
template <int K, int CO, int OX>
__global__ void __launch_bounds__(kBlockThreads)
    weight_grad_kernel(const float* __restrict__ dy, const float* __restrict__ x, float* __restrict__ partial,
                       WeightGradPlan p) {
  constexpr int SEG = segment_floats(OX, K), DSEG = round_up_to_4(OX);
  extern __shared__ float4 shared4[];
  float* shared = reinterpret_cast<float*>(shared4);
  const int chunk = blockIdx.x, g = blockIdx.y;
  const int item = blockIdx.z * blockDim.x + threadIdx.x;
  const bool active = item < p.items();
  const int r = item % p.row_splits, kh = (item / p.row_splits) % K;
  const int ci = (item / (p.row_splits * K)) % p.cin, cob = item / (p.row_splits * K * p.cin);
  const int first = chunk * p.per_chunk, last = min(first + p.per_chunk, p.batch);
  const int xt = p.x_floats(), dt = p.dy_floats();
  const int x_row = p.x_row(), dy_row = p.col_tiles * DSEG;
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
    copy_tiles_to_shared(xs, x + s0 * x_sample + static_cast<int64_t>(g) * p.cin * p.h * p.w, x_sample, n, p.cin,
                         p.h, p.w, p.pad, p.hp, x_row, p.col_tiles, OX, SEG, xt);
    // dy tiles: the same layout without padding or overlap, and zero channels
    // up to cout_pad.
    const float* dy_stage = dy + s0 * dy_sample + static_cast<int64_t>(g) * p.cout * p.ho * p.wo;
    const int e = threadIdx.x % dy_row, first_row = threadIdx.x / dy_row, rows_per_pass = blockDim.x / dy_row;
    const int ox = (e / DSEG) * OX + e % DSEG;
    const bool column_inside = e % DSEG < OX && ox < p.wo;
    for (int s = 0; s < n && first_row < rows_per_pass; ++s) {
      for (int c = 0; c < p.co_blocks * CO; ++c) {
        for (int oy = first_row; oy < p.ho; oy += rows_per_pass) {
          float v = 0.f;
          if (c < p.cout && column_inside) v = dy_stage[s * dy_sample + (c * p.ho + oy) * p.wo + ox];
          dys[s * dt + (c * p.ho + oy) * dy_row + e] = v;
        }
      }
    }
    __syncthreads();
    if (!active) continue;
    for (int s = 0; s < n; ++s) {
      const float* x_rows = xs + s * xt + (ci * p.hp + kh) * x_row;
      const float* dy_rows = dys + s * dt + cob * CO * p.ho * dy_row;
      for (int oy = r; oy < p.ho; oy += p.row_splits) {
        for (int col = 0; col < p.col_tiles; ++col) {
          float xr[SEG];
          load_vector(x_rows + oy * x_row + col * SEG, xr);
#pragma unroll
          for (int c = 0; c < CO; ++c) {
            float d[DSEG];
            load_vector(dy_rows + (c * p.ho + oy) * dy_row + col * DSEG, d);
#pragma unroll
            for (int j = 0; j < OX; ++j) {
#pragma unroll
              for (int kw = 0; kw < K; ++kw) acc[c][kw] = fmaf(d[j], xr[j + kw], acc[c][kw]);
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
  const size_t shared = static_cast<size_t>(p.shared_floats()) * sizeof(float);
  dispatch_tiles(p.kernel, p.co_tile, p.ox_tile, [&](auto k, auto co, auto ox) {
    weight_grad_kernel<decltype(k)::value, decltype(co)::value, decltype(ox)::value>
        <<<grid, p.threads, shared, static_cast<cudaStream_t>(stream)>>>(dy, x, partial, p);
  });
  check_launch("grouped conv weight gradient");
}

}  // namespace colo::fuse::cuda
