#include "colo/estimate/torchscript_model.h"

#include <memory>

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/estimate/caching_allocator_model.h"

namespace colo::estimate {
namespace {

at::Tensor first_tensor(const c10::IValue& value) {
  if (value.isTensor()) return value.toTensor();
  if (value.isTuple()) {
    for (const auto& element : value.toTuple()->elements()) {
      if (element.isTensor()) return element.toTensor();
    }
  }
  if (value.isList()) {
    c10::List<c10::IValue> list = value.toList();
    for (size_t i = 0; i < list.size(); ++i) {
      if (list.get(i).isTensor()) return list.get(i).toTensor();
    }
  }
  throw std::runtime_error("the TorchScript model's forward returned no tensor (got " + value.tagKind() + ")");
}

// A tensor's bytes in the CUDA caching allocator's blocks.
int64_t allocator_blocks(const at::Tensor& t) {
  return CachingAllocatorModel::rounded_size(t.numel() * static_cast<int64_t>(t.element_size()));
}

}  // namespace

at::Tensor cross_entropy_against_class0(const at::Tensor& output) {
  if (output.dim() < 2) {
    throw std::runtime_error("expected the model's output to be (batch, ..., classes), got " +
                             std::to_string(output.dim()) + " dimension(s)");
  }
  at::Tensor logits = output.dim() == 2 ? output : output.reshape({-1, output.size(-1)});
  return at::cross_entropy_loss(logits, at::zeros({logits.size(0)}, logits.options().dtype(at::kLong)));
}

UserModel load_torchscript_model(const std::string& path, const data::InputShape& input) {
  if (!path_exists(path)) throw InputError(path, "", "no such file");
  std::shared_ptr<torch::jit::Module> module;
  try {
    module = std::make_shared<torch::jit::Module>(torch::jit::load(path, at::Device(at::kCPU)));
  } catch (const c10::Error& e) {
    throw InputError(path, "", std::string("expected a TorchScript file (torch.jit.save): ") +
                                   e.what_without_backtrace());
  }
  UserModel model;
  model.input = input;
  model.name = "user";
  for (const auto& t : module->parameters()) model.resident_bytes += allocator_blocks(t);
  for (const auto& t : module->buffers()) model.resident_bytes += allocator_blocks(t);
  model.set_mode = [module](bool training) { module->train(training); };
  model.loss = [module](const at::Tensor& x, const at::Tensor&) {
    // The graph executor would optimise (fuse) the graph after its first
    // profiled runs, so the two recorded batches would see different graphs:
    // run the module as written.
    torch::jit::GraphOptimizerEnabledGuard as_written(false);
    return cross_entropy_against_class0(first_tensor(module->forward({x})));
  };
  return model;
}

}  // namespace colo::estimate
