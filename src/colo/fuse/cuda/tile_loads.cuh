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
// consecutive samples are `src_sample` floats apart. Each thread keeps one
// position within a row, so the loop divides nothing; needs blockDim.x >= row.
__device__ __forceinline__ void copy_tiles_to_shared(float* dst, const float* src, int64_t src_sample,
                                                     int samples, int channels, int h, int w, int pad, int hp,
                                                     int row, int col_tiles, int ox_tile, int segment,
                                                     int dst_sample) {
  const int e = threadIdx.x % row, first_row = threadIdx.x / row, rows_per_pass = blockDim.x / row;
  if (first_row >= rows_per_pass) return;
  const int t = e / segment, ix = t * ox_tile + e % segment - pad;
  const bool column_inside = t < col_tiles && ix >= 0 && ix < w;
  for (int s = 0; s < samples; ++s) {
    for (int c = 0; c < channels; ++c) {
      const float* plane_src = src + s * src_sample + c * h * w;
      float* plane_dst = dst + s * dst_sample + c * hp * row;
      for (int r = first_row; r < hp; r += rows_per_pass) {
        const int iy = r - pad;
        plane_dst[r * row + e] = column_inside && iy >= 0 && iy < h ? plane_src[iy * w + ix] : 0.f;
      }
    }
  }
}

}  // namespace colo::fuse::cuda
