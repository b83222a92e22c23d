#pragma once
// How colo's grouped-convolution kernels cut one convolution into blocks and
// register tiles. Plain C++ shared by nvcc and the host compiler: the plans
// are made on the host (conv_plan.cpp) and passed by value to the kernels.
//
// Every kernel keeps a CO x OX register tile: CO output channels of one
// output row, OX adjacent columns. The plan picks CO and OX from the small
// sets below so that the channel and column tiles waste little; CO is 2 or 4
// so that a tap's CO weights are one float2/float4 load.

#include "colo/fuse/cuda/grouped_conv_kernels.h"

// The plans' size helpers run on the host and in the kernels.
#ifdef __CUDACC__
#define COLO_HOST_DEVICE __host__ __device__
#else
#define COLO_HOST_DEVICE
#endif

namespace colo::fuse::cuda {

// Register tile sizes the kernels are compiled for.
inline constexpr int kChannelTiles[] = {4, 2};
inline constexpr int kColumnTiles[] = {4, 6, 8, 10, 12, 14, 16};
// Threads per block, and floats of shared memory a block may use (48 KB, the
// limit without an opt-in attribute).
inline constexpr int kBlockThreads = 128;
inline constexpr int kSharedFloats = 48 * 1024 / 4;

COLO_HOST_DEVICE constexpr int round_up_to_4(int n) { return (n + 3) / 4 * 4; }
// Floats of one input row segment a thread reads for an OX-wide tile: the
// OX + K - 1 columns it needs, rounded up so that it loads float4s.
COLO_HOST_DEVICE constexpr int segment_floats(int ox_tile, int kernel) { return round_up_to_4(ox_tile + kernel - 1); }
// Floats between two padded input rows in shared memory: the column tiles'
// segments, plus 4 where that would be an even number of float4s, so that
// threads reading adjacent rows hit different banks.
COLO_HOST_DEVICE constexpr int row_floats(int col_tiles, int segment) {
  return col_tiles * segment + ((col_tiles * segment / 4) % 2 == 0 ? 4 : 0);
}

// Shared memory layouts, chosen so that every register tile loads with
// aligned float2/float4 reads:
//  - weights [ci][kh][kw][cout_pad]: the CO channels of a tap are adjacent;
//  - input tiles [ci][padded row][column tile][segment]: each column tile
//    has its own copy of the columns it reads (K - 1 of them are shared
//    with the next tile), zero outside the image; rows are row_floats apart.

// A direct convolution y = conv(x, w) in the orientation one kernel computes
// it, each thread one register tile of one of the block's samples (several
// rounds where a sample has more tiles than a block has threads): the forward pass (in = x, out = y), or the input gradient (in = dy,
// out = dx, weights transposed and flipped, padding K - 1 - P). Sizes are per
// group; 32-bit since every tile is far below 2^31.
struct DirectConvPlan {
  int batch = 0, groups = 0, kernel = 0;
  int cin = 0, cout = 0;       // channels per group of this convolution's input and output
  int h = 0, w = 0, pad = 0;   // input size and zero padding
  int ho = 0, wo = 0;          // output size
  int hp = 0;                  // padded input rows
  int co_tile = 0, ox_tile = 0;
  int co_blocks = 0, col_tiles = 0;
  int samples = 0;             // samples of one group per block
  int ci_chunk = 0;            // input channels staged in shared memory at once
  int threads = 0;             // per block
  bool transposed = false;     // weights read as the input gradient needs them
  COLO_HOST_DEVICE int cout_pad() const { return co_blocks * co_tile; }
  COLO_HOST_DEVICE int segment() const { return segment_floats(ox_tile, kernel); }
  COLO_HOST_DEVICE int weight_floats() const { return round_up_to_4(cin * kernel * kernel * cout_pad()); }
  COLO_HOST_DEVICE int row() const { return row_floats(col_tiles, segment()); }
  COLO_HOST_DEVICE int channel_floats() const { return hp * row(); }
  COLO_HOST_DEVICE int tile_floats() const { return ci_chunk * channel_floats(); }  // per sample
  COLO_HOST_DEVICE int shared_floats() const { return weight_floats() + samples * tile_floats(); }
  COLO_HOST_DEVICE int items_per_sample() const { return co_blocks * ho * col_tiles; }
};

// The weight gradient dw[co, ci, kh, kw] = sum over samples and output
// positions of dy[co] * x[ci] shifted. A thread owns CO output channels x one
// (ci, kh) x all K taps kw, over every `row_splits`-th output row; blocks
// cover (batch chunk, group, slice of those items). Partial sums land in
// partial[chunks * row_splits, G * Co, Ci, K, K]. The x tile is laid out as
// the direct convolution's; the dy tile as [cout_pad][ho][column tile][OX
// rounded up to 4], zero beyond the last column and channel.
struct WeightGradPlan {
  int batch = 0, groups = 0, kernel = 0;
  int cin = 0, cout = 0;
  int h = 0, w = 0, pad = 0, ho = 0, wo = 0;
  int hp = 0;
  int co_tile = 0, ox_tile = 0;
  int co_blocks = 0, col_tiles = 0;
  int row_splits = 0;
  int per_chunk = 0, chunks = 0;  // samples per block, blocks along the batch
  int stage = 0;                  // samples loaded into shared memory at once
  int item_blocks = 0;            // blocks along the items
  int threads = 0;                // per block
  COLO_HOST_DEVICE int items() const { return co_blocks * cin * kernel * row_splits; }
  COLO_HOST_DEVICE int segment() const { return segment_floats(ox_tile, kernel); }
  COLO_HOST_DEVICE int dy_segment() const { return round_up_to_4(ox_tile); }
  COLO_HOST_DEVICE int x_row() const { return row_floats(col_tiles, segment()); }
  COLO_HOST_DEVICE int x_floats() const { return cin * hp * x_row(); }
  COLO_HOST_DEVICE int dy_row() const { return col_tiles * dy_segment(); }
  COLO_HOST_DEVICE int dy_floats() const { return co_blocks * co_tile * ho * col_tiles * dy_segment(); }
  COLO_HOST_DEVICE int shared_floats() const { return stage * (x_floats() + dy_floats()); }
  COLO_HOST_DEVICE int partial_slices() const { return chunks * row_splits; }
};

// Plans for the forward pass, the input gradient and the weight gradient;
// `ok` false where the shape does not fit (then the kernels must not run).
// Every block has at least as many threads as a shared-memory row has
// floats and as the padded output channels (the copies rely on it).
struct GroupedConvPlans {
  bool ok = false;
  DirectConvPlan forward, input_grad;
  WeightGradPlan weight_grad;
};
GroupedConvPlans plan_grouped_conv(const GroupedConvShape& shape);

}  // namespace colo::fuse::cuda
