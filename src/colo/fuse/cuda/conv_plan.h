#pragma once
// How colo's grouped-convolution kernels cut one convolution into blocks and
// register tiles. Plain C++ shared by nvcc and the host compiler: the plans
// are made on the host (conv_plan.cpp) and passed by value to the kernels.
//
// Every kernel keeps a CO x OX register tile: CO output channels of one
// output row, OX adjacent columns. The plan picks CO and OX from the small
// sets below so that the channel and column tiles waste little.

#include "colo/fuse/cuda/grouped_conv_kernels.h"

// The plans' size helpers run on the host and in the kernels.
#ifdef __CUDACC__
#define COLO_HOST_DEVICE __host__ __device__
#else
#define COLO_HOST_DEVICE
#endif

namespace colo::fuse::cuda {

// Register tile sizes the kernels are compiled for.
inline constexpr int kChannelTiles[] = {4, 3, 2};
inline constexpr int kColumnTiles[] = {4, 5, 6, 8};
// Threads per block, and floats of shared memory a block may use (48 KB, the
// limit without an opt-in attribute).
inline constexpr int kBlockThreads = 128;
inline constexpr int kSharedFloats = 48 * 1024 / 4;

// A direct convolution y = conv(x, w) in the orientation one kernel computes
// it: the forward pass (in = x, out = y), or the input gradient (in = dy,
// out = dx, weights transposed and flipped, padding K - 1 - P). Sizes are per
// group; 32-bit since every tile is far below 2^31.
struct DirectConvPlan {
  int batch = 0, groups = 0, kernel = 0;
  int cin = 0, cout = 0;       // channels per group of this convolution's input and output
  int h = 0, w = 0, pad = 0;   // input size and zero padding
  int ho = 0, wo = 0;          // output size
  int hp = 0, wp = 0;          // the zero-padded input tile in shared memory
  int co_tile = 0, ox_tile = 0;
  int co_blocks = 0, col_tiles = 0;
  int samples = 0;             // samples of one group per block
  int threads = 0;             // per block
  bool transposed = false;     // weights read as the input gradient needs them
  COLO_HOST_DEVICE int weight_floats() const { return co_blocks * co_tile * cin * kernel * kernel; }
  COLO_HOST_DEVICE int tile_floats() const { return cin * hp * wp; }
  COLO_HOST_DEVICE int shared_floats() const { return weight_floats() + samples * tile_floats(); }
  COLO_HOST_DEVICE int items_per_sample() const { return co_blocks * ho * col_tiles; }
};

// The weight gradient dw[co, ci, kh, kw] = sum over samples and output
// positions of dy[co] * x[ci] shifted. A thread owns CO output channels x one
// (ci, kh) x all K taps kw, over every `row_splits`-th output row; blocks
// cover (batch chunk, group, slice of those items). Partial sums land in
// partial[chunks * row_splits, G * Co, Ci, K, K].
struct WeightGradPlan {
  int batch = 0, groups = 0, kernel = 0;
  int cin = 0, cout = 0;
  int h = 0, w = 0, pad = 0, ho = 0, wo = 0;
  int hp = 0, wp = 0;          // zero-padded x tile
  int dy_cols = 0;             // dy tile row length: col_tiles * ox_tile, zero beyond wo
  int co_tile = 0, ox_tile = 0;
  int co_blocks = 0, col_tiles = 0;
  int row_splits = 0;
  int per_chunk = 0, chunks = 0;  // samples per block, blocks along the batch
  int stage = 0;                  // samples loaded into shared memory at once
  int item_blocks = 0;            // blocks along the items
  COLO_HOST_DEVICE int items() const { return co_blocks * cin * kernel * row_splits; }
  COLO_HOST_DEVICE int x_floats() const { return cin * hp * wp; }
  COLO_HOST_DEVICE int dy_floats() const { return co_blocks * co_tile * ho * dy_cols; }
  COLO_HOST_DEVICE int shared_floats() const { return stage * (x_floats() + dy_floats()); }
  COLO_HOST_DEVICE int partial_slices() const { return chunks * row_splits; }
};

// Plans for the forward pass, the input gradient and the weight gradient;
// `ok` false where the shape does not fit (then the kernels must not run).
struct GroupedConvPlans {
  bool ok = false;
  DirectConvPlan forward, input_grad;
  WeightGradPlan weight_grad;
};
GroupedConvPlans plan_grouped_conv(const GroupedConvShape& shape);

}  // namespace colo::fuse::cuda
