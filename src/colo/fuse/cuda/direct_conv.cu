// The forward pass and the input gradient of a small-group convolution: both
// are direct convolutions (conv_plan.h's DirectConvPlan), one kernel.

#include "colo/fuse/cuda/conv_plan.h"
#include "colo/fuse/cuda/grouped_conv_kernels.h"
#include "colo/fuse/cuda/tile_dispatch.cuh"
#include "colo/fuse/cuda/tile_loads.cuh"

namespace colo::fuse::cuda {
namespace {

// Block (sample chunk, group): the group's weights, in this convolution's
// orientation and padded to whole channel tiles with zeros, go to shared
// memory once; the samples' input tiles follow ci_chunk channels at a time
// (layouts in conv_plan.h). Each thread accumulates CO channels x OX columns
// of one output row, per (input channel, kernel row) reading one row
// segment and K weight vectors.
template <int K, int CO, int OX>
__global__ void __launch_bounds__(kBlockThreads)
    direct_conv_kernel(const float* __restrict__ in, const float* __restrict__ weight,
                       const float* __restrict__ bias, float* __restrict__ out, DirectConvPlan p) {
  constexpr int SEG = segment_floats(OX, K);
  extern __shared__ float4 shared4[];
  float* shared = reinterpret_cast<float*>(shared4);
  const int g = blockIdx.y;
  const int first = blockIdx.x * p.samples;
  const int samples = min(p.samples, p.batch - first);
  const int cout_pad = p.cout_pad();
  float* ws = shared;
  float* xs = shared + p.weight_floats();

  // Each thread keeps one output channel (cout_pad <= 32 <= blockDim.x).
  const int co = threadIdx.x % cout_pad, taps_per_pass = blockDim.x / cout_pad;
  for (int pt = threadIdx.x / cout_pad; pt < p.cin * K * K && threadIdx.x / cout_pad < taps_per_pass;
       pt += taps_per_pass) {
    const int ci = pt / (K * K), tap = pt % (K * K);
    float v = 0.f;
    if (co < p.cout) {
      v = p.transposed ? weight[((g * p.cin + ci) * p.cout + co) * K * K + (K * K - 1 - tap)]
                       : weight[((g * p.cout + co) * p.cin + ci) * K * K + tap];
    }
    ws[pt * cout_pad + co] = v;
  }
  const int64_t in_sample = static_cast<int64_t>(p.groups) * p.cin * p.h * p.w;
  const float* in_chunk = in + static_cast<int64_t>(first) * in_sample + static_cast<int64_t>(g) * p.cin * p.h * p.w;
  const int per_sample = p.items_per_sample(), tile = p.tile_floats(), row = p.row();
  const int64_t out_sample = static_cast<int64_t>(p.groups) * p.cout * p.ho * p.wo;
  float* out_chunk = out + static_cast<int64_t>(first) * out_sample + static_cast<int64_t>(g) * p.cout * p.ho * p.wo;
  const bool one_stage = p.ci_chunk >= p.cin;

  for (int base = 0; base < samples * per_sample; base += blockDim.x) {
    const int item = base + threadIdx.x;
    const bool active = item < samples * per_sample;
    const int s = item / per_sample, rest = item % per_sample;
    const int cob = rest / (p.ho * p.col_tiles), oy = (rest / p.col_tiles) % p.ho, col = rest % p.col_tiles;
    float acc[CO][OX];
#pragma unroll
    for (int c = 0; c < CO; ++c) {
      const int co = cob * CO + c;
      const float b = active && bias != nullptr && co < p.cout ? bias[g * p.cout + co] : 0.f;
#pragma unroll
      for (int j = 0; j < OX; ++j) acc[c][j] = b;
    }
    const float* x_rows = xs + s * tile + oy * row + col * SEG;
    const float* w_taps = ws + cob * CO;
    for (int ci0 = 0; ci0 < p.cin; ci0 += p.ci_chunk) {
      const int channels = min(p.ci_chunk, p.cin - ci0);
      if (base == 0 || !one_stage) {
        __syncthreads();
        copy_tiles_to_shared(xs, in_chunk + static_cast<int64_t>(ci0) * p.h * p.w, in_sample, samples, channels,
                             p.h, p.w, p.pad, p.hp, row, p.col_tiles, OX, SEG, tile);
        __syncthreads();
      }
      if (!active) continue;
      for (int c_in = 0; c_in < channels; ++c_in) {
        const int ci = ci0 + c_in;
#pragma unroll
        for (int kh = 0; kh < K; ++kh) {
          float xr[SEG];
          load_vector(x_rows + (c_in * p.hp + kh) * row, xr);
#pragma unroll
          for (int kw = 0; kw < K; ++kw) {
            float wv[CO];
            load_vector(w_taps + ((ci * K + kh) * K + kw) * cout_pad, wv);
#pragma unroll
            for (int c = 0; c < CO; ++c) {
#pragma unroll
              for (int j = 0; j < OX; ++j) acc[c][j] = fmaf(wv[c], xr[j + kw], acc[c][j]);
            }
          }
        }
      }
    }
    if (!active) continue;
    float* y = out_chunk + s * out_sample + oy * p.wo + col * OX;
#pragma unroll
    for (int c = 0; c < CO; ++c) {
      const int co = cob * CO + c;
      if (co >= p.cout) break;
#pragma unroll
      for (int j = 0; j < OX; ++j) {
        if (col * OX + j < p.wo) y[co * p.ho * p.wo + j] = acc[c][j];
      }
    }
  }
}

void launch_direct(const float* in, const float* w, const float* bias, float* out, const DirectConvPlan& p,
                   void* stream, const char* what) {
  dim3 grid((p.batch + p.samples - 1) / p.samples, p.groups);
  const size_t shared = static_cast<size_t>(p.shared_floats()) * sizeof(float);
  dispatch_tiles(p.kernel, p.co_tile, p.ox_tile, [&](auto k, auto co, auto ox) {
    direct_conv_kernel<decltype(k)::value, decltype(co)::value, decltype(ox)::value>
        <<<grid, p.threads, shared, static_cast<cudaStream_t>(stream)>>>(in, w, bias, out, p);
  });
  check_launch(what);
}

}  // namespace

void grouped_conv_forward(const float* x, const float* w, const float* bias, float* y, const GroupedConvShape& s,
                          void* stream) {
  launch_direct(x, w, bias, y, plan_grouped_conv(s).forward, stream, "grouped conv forward");
}

void grouped_conv_input_grad(const float* dy, const float* w, float* dx, const GroupedConvShape& s, void* stream) {
  launch_direct(dy, w, nullptr, dx, plan_grouped_conv(s).input_grad, stream, "grouped conv input gradient");
}

}  // namespace colo::fuse::cuda
