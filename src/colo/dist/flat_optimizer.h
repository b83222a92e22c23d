#pragma once
// SGD, Adam or AdamW over one flat parameter buffer (a whole model on a
// worker, or one server's key range), updating it exactly as torch::optim
// updates the parameters it was cut from.

#include <memory>
#include <vector>

#include <ATen/Tensor.h>

#include "colo/train/optimizer.h"

namespace colo::fuse {
class FusedOptimizer;
}

namespace colo::dist {

class FlatOptimizer {
 public:
  // `values` and `gradients`: [P] float32 buffers on one device; the
  // optimiser reads the gradients and updates the values in place.
  FlatOptimizer(at::Tensor values, at::Tensor gradients, const train::OptimizerSpec& spec);
  ~FlatOptimizer();

  void step(double lr);

  // The state as flat tensors, to read or overwrite in place: moment
  // buffers [P] float32 (none for plain SGD, one for SGD with momentum, two
  // for Adam/AdamW), then the step counter [1] int64.
  std::vector<at::Tensor> state() const;
  // How many [P] buffers state() lists for `spec`.
  static int moment_buffers(const train::OptimizerSpec& spec);

 private:
  at::Tensor values_;
  std::unique_ptr<fuse::FusedOptimizer> optimizer_;
};

}  // namespace colo::dist
