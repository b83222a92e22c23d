#pragma once
// The workspace cuDNN takes for each convolution on one device: measured at
// a few batch sizes per convolution shape (bench/estimate/measure_conv_workspace),
// looked up when a job's steps are replayed.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "colo/estimate/training_graph.h"

namespace colo::estimate {

// The three kernels a training step runs per convolution.
enum class ConvPass { kForward = 0, kInputGrad = 1, kWeightGrad = 2 };

// "forward", "input_grad", "weight_grad".
const char* conv_pass_name(ConvPass pass);

class ConvWorkspaceTable {
 public:
  // Records that `pass` of shape `key` (ConvGeometry::key()) took `bytes` of
  // workspace at batch size `batch` (> 0).
  void add(const std::string& key, ConvPass pass, int64_t batch, int64_t bytes);

  // Workspace of `pass` for `conv` at `batch`. Between two measured batch
  // sizes it errs high: the larger of the interpolation and each neighbour's
  // bytes per sample times `batch` (cuDNN may switch algorithms between
  // them). Outside the measured range, the nearest measurement scaled by the
  // batch. A shape the table lacks takes its nearest measured shape's
  // workspace (nearest_shape), scaled by the bytes the pass reads per sample
  // (input for forward and weight gradient, output gradient for the input
  // gradient); `fallback_ratio(pass)` times those bytes when no shape of the
  // table has that pass. 0 for an empty table.
  int64_t workspace_bytes(const ConvGeometry& conv, ConvPass pass, int64_t batch) const;

  // The measured shape most like `conv` for `pass`: the same kind (dense,
  // depthwise or grouped) first, then the closest kernel and stride, then
  // channels and resolution on a log scale. Empty when none has the pass.
  std::string nearest_shape(const ConvGeometry& conv, ConvPass pass) const;

  // Median over the table of workspace over the pass's input bytes (see above).
  double fallback_ratio(ConvPass pass) const;

  bool empty() const { return shapes_.empty(); }
  size_t shapes() const { return shapes_.size(); }

  // {"shapes": {key: {"forward": [[batch, bytes], ...], ...}}, ...}; other
  // top-level fields are ignored. Throws std::runtime_error on malformed text.
  static ConvWorkspaceTable from_json(const std::string& text);
  std::string to_json() const;

 private:
  using Points = std::vector<std::pair<int64_t, int64_t>>;  // (batch, bytes), sorted by batch
  std::map<std::string, std::array<Points, 3>> shapes_;
  mutable std::array<double, 3> fallback_{};
  mutable std::map<std::string, std::array<std::string, 3>> nearest_;  // cache of nearest_shape
  int64_t measured_bytes(const Points& points, int64_t batch) const;
  mutable bool fallback_stale_ = false;
  void update_fallback() const;
};

// Workspace of `pass` for `conv` at `batch` with elements of `element_bytes`:
// `half`'s (measured in bf16) for 2-byte elements when given and measured,
// else `full`'s float32 figure times element_bytes / 4. cuDNN's bf16 and
// fp16 kernels are not float32's at half the size: a 3-channel stem's weight
// gradient took 345 MiB in bf16 where float32's took none (H200).
int64_t conv_workspace_for(const ConvWorkspaceTable& full, const ConvWorkspaceTable* half, const ConvGeometry& conv,
                           ConvPass pass, int64_t batch, int64_t element_bytes);

// Bytes `pass` of `conv` reads per sample, the scale of its workspace.
int64_t conv_pass_input_bytes_per_sample(const ConvGeometry& conv, ConvPass pass);

}  // namespace colo::estimate
