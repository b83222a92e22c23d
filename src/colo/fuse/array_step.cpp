#include "colo/fuse/array_step.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#if COLO_HAS_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "colo/fuse/autocast_guard.h"

namespace colo::fuse {

#if COLO_HAS_CUDA
struct ArrayStep::Graph {
  at::cuda::CUDAGraph graph;
};
#else
struct ArrayStep::Graph {};
#endif

at::Tensor per_model_loss(const at::Tensor& logits, const at::Tensor& labels) {
  int64_t models = logits.size(0), batch = logits.size(1);
  return at::cross_entropy_loss(logits.reshape({models * batch, -1}), labels.repeat({models}), {},
                                at::Reduction::None)
      .view({models, batch})
      .mean(1);
}

ArrayStep::ArrayStep(FusedClassifier& array, FusedOptimizer& optimizer, bool cuda_graph, bool bf16_autocast)
    : array_(array), optimizer_(optimizer), bf16_autocast_(bf16_autocast) {
  at::Tensor any = array.parameters().front();
  want_graph_ = cuda_graph && any.is_cuda();
  auto on_device = at::TensorOptions().device(any.device());
  loss_sums_ = at::zeros({array.models()}, on_device.dtype(at::kDouble));
  correct_ = at::zeros({array.models()}, on_device.dtype(at::kLong));
}

ArrayStep::~ArrayStep() = default;

bool ArrayStep::graphed() const { return graph_ != nullptr; }

void ArrayStep::reset_totals() {
  loss_sums_.zero_();
  correct_.zero_();
}

void ArrayStep::eager(const at::Tensor& inputs, const at::Tensor& labels) {
  at::Tensor logits;
  {
    Bf16AutocastGuard autocast(inputs.device().type(), bf16_autocast_);
    logits = array_.forward(inputs);
  }
  at::Tensor losses = per_model_loss(logits.to(at::kFloat), labels);
  optimizer_.zero_grad();
  losses.sum().backward();
  optimizer_.step();
  torch::NoGradGuard no_grad;
  loss_sums_.add_(losses.detach().to(at::kDouble) * static_cast<double>(labels.size(0)));
  correct_.add_(logits.detach().argmax(2).eq(labels).sum(1));
}

void ArrayStep::run(const at::Tensor& inputs, const at::Tensor& labels) {
  bool graph_shape = static_inputs_.defined() && inputs.sizes() == static_inputs_.sizes();
  if (graph_ && graph_shape) {
#if COLO_HAS_CUDA
    static_inputs_.copy_(inputs);
    static_labels_.copy_(labels);
    graph_->graph.replay();
#endif
    return;
  }
  if (!want_graph_ || !graph_error_.empty() || (static_inputs_.defined() && !graph_shape)) {
    eager(inputs, labels);
    return;
  }
  if (!static_inputs_.defined()) {
    static_inputs_ = inputs.clone();
    static_labels_ = labels.clone();
  }
  if (warmup_left_ > 0) {
    --warmup_left_;
    eager(inputs, labels);
    return;
  }
  capture(inputs, labels);
}

void ArrayStep::capture(const at::Tensor& inputs, const at::Tensor& labels) {
#if COLO_HAS_CUDA
  static_inputs_.copy_(inputs);
  static_labels_.copy_(labels);
  auto graph = std::make_unique<Graph>();
  try {
    // Thread-local capture: the data loader's prefetch thread keeps pinning
    // and copying the next batches while this thread captures, which a
    // global capture forbids (cudaErrorStreamCaptureUnsupported).
    graph->graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    eager(static_inputs_, static_labels_);
    graph->graph.capture_end();
  } catch (const std::exception& e) {
    graph_error_ = e.what();
    graph_error_ = graph_error_.substr(0, graph_error_.find('\n'));
    try {
      graph->graph.capture_end();  // leave the stream out of capture mode
    } catch (const std::exception&) {
    }
    // A failed capture recorded nothing: train this batch eagerly.
    eager(inputs, labels);
    return;
  }
  graph_ = std::move(graph);
  // Capturing records the step without running it.
  graph_->graph.replay();
#else
  eager(inputs, labels);
#endif
}

}  // namespace colo::fuse
