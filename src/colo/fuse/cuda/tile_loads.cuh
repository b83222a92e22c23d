#pragma once
// Device helpers shared by the grouped-convolution kernels: aligned vector
// loads from shared memory into register arrays, and the copy of an input
// tile into the column-tiled layout of conv_plan.h.

#include <cstdint>

namespace colo::fuse::cuda {

// out[0..N) = p[0..N) with float4 (N % 4 == 0) or float2 (N == 2) loads;
// p is 16- or 8-byte aligned accordingly.
template <int N>
__device__ __forceinline__ void load_vector(const float* p, float (&out)[N]) {
  static_assert(N % 4 == 0 || N == 2, "vector loads of 2 or a multiple of 4 floats");
  if constexpr (N == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    out[0] = v.x, out[1] = v.y;
  } else {
#pragma unroll
    for (int q = 0; q < N / 4; ++q) {
      const float4 v = reinterpret_cast<const float4*>(p)[q];
      out[4 * q] = v.x, out[4 * q + 1] = v.y, out[4 * q + 2] = v.z, out[4 * q + 3] = v.w;
    }
  }
}

// The block copies `channels` channels of `samples` inputs of one group into
// shared memory as [sample][channel][padded row][column tile][segment],
// samples `dst_sample` floats apart: element (row r, tile t, j) holds the
// input at row r - pad, column t * ox_tile + j - pad, or zero outside the
// image (and in the padding at the end of each row, which is `row` floats
// long). `src` points at the first sample's first channel to copy;
// consecutive samples are `src_sample` floats apart.
__device__ __forceinline__ void copy_tiles_to_shared(float* dst, const float* src, int64_t src_sample,
                                                     int samples, int channels, int h, int w, int pad, int hp,
                                                     int row, int col_tiles, int ox_tile, int segment,
                                                     int dst_sample) {
  const int plane = hp * row, tile = channels * plane;
  for (int i = threadIdx.x; i < samples * tile; i += blockDim.x) {
    const int s = i / tile, c = (i % tile) / plane, r = (i % plane) / row;
    const int t = (i % row) / segment, j = i % segment;
    const int iy = r - pad, ix = t * ox_tile + j - pad;
    float v = 0.f;
    if (t < col_tiles && iy >= 0 && iy < h && ix >= 0 && ix < w) v = src[s * src_sample + (c * h + iy) * w + ix];
    dst[s * dst_sample + i % tile] = v;
  }
}

}  // namespace colo::fuse::cuda
