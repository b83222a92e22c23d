#include "colo/fuse/cuda/conv_plan.h"

#include <algorithm>
#include <iterator>

namespace colo::fuse::cuda {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }
int round_up_to_warp(int n) { return ceil_div(n, 32) * 32; }

// The channel tile that wastes fewest padded channels, the larger on ties.
int channel_tile(int channels) {
  int best = kChannelTiles[0];
  for (int tile : kChannelTiles) {
    if (ceil_div(channels, tile) * tile - channels < ceil_div(channels, best) * best - channels) best = tile;
  }
  return best;
}

// The narrowest column tile that covers a row in as few tiles as the widest
// would.
int column_tile(int columns) {
  constexpr int widest = kColumnTiles[std::size(kColumnTiles) - 1];
  const int need = ceil_div(columns, ceil_div(columns, widest));
  for (int tile : kColumnTiles) {
    if (tile >= need) return tile;
  }
  return widest;
}

// As many samples as give every thread one register tile (at most 8), and
// as many input channels staged at once as fit in 24 KB of shared memory
// with the weights (so that several blocks share an SM), or failing that in
// all a block may use; samples 0 if not even one channel of one sample fits.
void choose_samples_and_channels(DirectConvPlan& p) {
  p.samples = std::clamp(kBlockThreads / p.items_per_sample(), 1, std::min(8, p.batch));
  p.threads = std::min(kBlockThreads, round_up_to_warp(std::max(p.samples * p.items_per_sample(), p.row())));
  for (int budget : {kSharedFloats / 2, kSharedFloats}) {
    p.ci_chunk = std::min(p.cin, (budget - p.weight_floats()) / (p.samples * p.channel_floats()));
    if (p.ci_chunk >= 1) return;
  }
  p.samples = 0;
}

DirectConvPlan plan_direct(const GroupedConvShape& s, int cin, int cout, int h, int w, int pad, bool transposed) {
  DirectConvPlan p;
  p.batch = static_cast<int>(s.batch);
  p.groups = static_cast<int>(s.groups);
  p.kernel = static_cast<int>(s.kernel);
  p.cin = cin, p.cout = cout, p.h = h, p.w = w, p.pad = pad, p.transposed = transposed;
  p.ho = h + 2 * pad - p.kernel + 1;
  p.wo = w + 2 * pad - p.kernel + 1;
  p.co_tile = channel_tile(cout);
  p.ox_tile = column_tile(p.wo);
  p.co_blocks = ceil_div(cout, p.co_tile);
  p.col_tiles = ceil_div(p.wo, p.ox_tile);
  p.hp = h + 2 * pad;
  choose_samples_and_channels(p);
  return p;
}

WeightGradPlan plan_weight_grad(const GroupedConvShape& s) {
  WeightGradPlan p;
  p.batch = static_cast<int>(s.batch);
  p.groups = static_cast<int>(s.groups);
  p.kernel = static_cast<int>(s.kernel);
  p.cin = static_cast<int>(s.in_per_group);
  p.cout = static_cast<int>(s.out_per_group);
  p.h = static_cast<int>(s.height), p.w = static_cast<int>(s.width), p.pad = static_cast<int>(s.padding);
  p.ho = static_cast<int>(s.out_height());
  p.wo = static_cast<int>(s.out_width());
  p.co_tile = channel_tile(p.cout);
  p.ox_tile = column_tile(p.wo);
  p.co_blocks = ceil_div(p.cout, p.co_tile);
  p.col_tiles = ceil_div(p.wo, p.ox_tile);
  p.hp = p.h + 2 * p.pad;
  // Few (channel, row) items, as in a first layer, are split over output rows.
  p.row_splits = std::clamp(kBlockThreads / (p.co_blocks * p.cin * p.kernel), 1, p.ho);
  p.item_blocks = ceil_div(p.items(), kBlockThreads);
  p.chunks = ceil_div(p.batch, 8);
  p.per_chunk = ceil_div(p.batch, p.chunks);
  p.stage = std::min(p.per_chunk, kSharedFloats / (p.x_floats() + p.dy_floats()));
  p.threads = std::min(kBlockThreads, round_up_to_warp(std::max({p.items(), p.x_row(), p.dy_row()})));
  return p;
}

}  // namespace

GroupedConvPlans plan_grouped_conv(const GroupedConvShape& s) {
  GroupedConvPlans plans;
  if (s.kernel != 3 && s.kernel != 5) return plans;
  if (s.batch < 1 || s.groups < 1 || s.in_per_group < 1 || s.out_per_group < 1) return plans;
  if (s.padding < 0 || s.padding >= s.kernel || s.out_height() < 1 || s.out_width() < 1) return plans;
  const int k = static_cast<int>(s.kernel), pad = static_cast<int>(s.padding);
  const int cin = static_cast<int>(s.in_per_group), cout = static_cast<int>(s.out_per_group);
  plans.forward = plan_direct(s, cin, cout, static_cast<int>(s.height), static_cast<int>(s.width), pad, false);
  plans.input_grad = plan_direct(s, cout, cin, static_cast<int>(s.out_height()), static_cast<int>(s.out_width()),
                                 k - 1 - pad, true);
  plans.weight_grad = plan_weight_grad(s);
  const auto& f = plans.forward;
  const auto& d = plans.input_grad;
  const auto& wg = plans.weight_grad;
  plans.ok = f.samples > 0 && d.samples > 0 && wg.stage > 0 && f.row() <= f.threads && d.row() <= d.threads &&
             f.cout_pad() <= 32 && d.cout_pad() <= 32 && std::max(wg.x_row(), wg.dy_row()) <= wg.threads;
  return plans;
}

bool grouped_conv_shape_supported(const GroupedConvShape& shape) { return plan_grouped_conv(shape).ok; }

int64_t grouped_conv_weight_grad_slices(const GroupedConvShape& shape) {
  return plan_grouped_conv(shape).weight_grad.partial_slices();
}

}  // namespace colo::fuse::cuda
