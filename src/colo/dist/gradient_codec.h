#pragma once
// How one gradient bucket travels in an all-reduce: dense float32, cast to
// bf16/fp16, or top-k sparsified with error feedback.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "colo/dist/communicator.h"

namespace colo::dist {

class GradientCodec {
 public:
  virtual ~GradientCodec() = default;
  // Starts summing `bucket` (a view of the flat gradients) over the group.
  virtual void launch(at::Tensor bucket, Communicator& group) = 0;
  // Waits for the launched reduction and leaves the sum in `bucket`.
  virtual void complete(at::Tensor bucket) = 0;
  // Bytes this worker sends for a bucket of `numel` entries in a ring of
  // `world` (ring all-reduce: 2 (W-1)/W of the payload; all-gather: (W-1)x).
  virtual int64_t bytes_sent(int64_t numel, int64_t world) const = 0;
  // What the codec carries from one step to the next (top-k's residual),
  // for a checkpoint: empty for the stateless codecs and before the first
  // step; restore() takes back what carried() gave.
  virtual std::vector<at::Tensor> carried() const { return {}; }
  virtual void restore(const std::vector<at::Tensor>& carried) { (void)carried; }
};

// `compression`: none | bf16 | fp16; `topk` > 0 selects top-k (a fraction of
// each bucket's entries, at least one) with per-bucket error feedback.
std::unique_ptr<GradientCodec> make_gradient_codec(const std::string& compression, double topk);

}  // namespace colo::dist
