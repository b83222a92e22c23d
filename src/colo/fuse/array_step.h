#pragma once
// One training step of a fused array: forward, per-model losses, backward and
// the fused optimiser, optionally replayed as one CUDA graph.

#include <cstdint>
#include <memory>

#include <ATen/Tensor.h>

#include "colo/fuse/fused_classifier.h"
#include "colo/fuse/fused_optimizer.h"

namespace colo::fuse {

class ArrayStep {
 public:
  // With `cuda_graph` on a CUDA array, the first full-size batches run eagerly
  // (warm-up), then the whole step is captured once and every later batch of
  // that shape is copied into the graph's input and replayed: one launch per
  // step instead of hundreds. Other shapes (a short last batch) run eagerly.
  // If capture fails, the step stays eager and graph_error() says why.
  // Callers on CUDA must keep one stream current for every call. With
  // `bf16_autocast` the forward pass runs under bfloat16 autocast and the
  // losses are taken in float32.
  ArrayStep(FusedClassifier& array, FusedOptimizer& optimizer, bool cuda_graph, bool bf16_autocast = false);
  ~ArrayStep();

  // Trains every model on one batch (inputs [B, ...], labels [B]); adds each
  // model's summed loss and correct count to the running totals. No host
  // synchronisation.
  void run(const at::Tensor& inputs, const at::Tensor& labels);

  // Running totals since reset_totals(): [N] float64 loss sums, [N] int64
  // correct counts, on the array's device.
  const at::Tensor& loss_sums() const { return loss_sums_; }
  const at::Tensor& correct() const { return correct_; }
  void reset_totals();

  bool graphed() const;
  const std::string& graph_error() const { return graph_error_; }

 private:
  void eager(const at::Tensor& inputs, const at::Tensor& labels);
  void capture(const at::Tensor& inputs, const at::Tensor& labels);

  FusedClassifier& array_;
  FusedOptimizer& optimizer_;
  bool want_graph_;
  bool bf16_autocast_;
  int64_t warmup_left_ = 3;
  at::Tensor loss_sums_, correct_;
  at::Tensor static_inputs_, static_labels_;
  std::string graph_error_;
  struct Graph;
  std::unique_ptr<Graph> graph_;
};

// Per-model mean cross-entropy of logits [N, B, classes] against labels [B]:
// [N]. Summing it gives each model exactly its own gradient.
at::Tensor per_model_loss(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace colo::fuse
