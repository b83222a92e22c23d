#pragma once
// Synchronous data parallelism: gradients are summed over all workers in
// buckets while backward is still running (as PyTorch DDP does), averaged,
// and every worker applies the same optimiser step, so the replicas stay
// identical.

#include <memory>
#include <vector>

#include "colo/dist/cluster_spec.h"
#include "colo/dist/communicator.h"
#include "colo/dist/flat_model.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/gradient_codec.h"
#include "colo/dist/strategy.h"

namespace torch::autograd {
struct Node;
}

namespace colo::dist {

class AllreduceStrategy : public Strategy {
 public:
  // Registers a hook on every parameter's gradient accumulator; `model`,
  // `optimizer` and `group` must outlive the strategy.
  AllreduceStrategy(FlatModel& model, FlatOptimizer& optimizer, Communicator& group,
                    const AllreduceOptions& options);
  ~AllreduceStrategy() override;

  std::string name() const override { return "allreduce"; }
  void begin_step() override;
  ExchangeCost finish_step(int64_t step, double lr) override;
  bool synchronous() const override { return true; }
  std::vector<at::Tensor> run_state() override;
  StrategyState state() const override;
  void restore(const StrategyState& state) override;

  // While disabled, backward launches no reductions (a switch has moved on).
  void set_enabled(bool enabled) { enabled_ = enabled; }

  // How many buckets the gradients are cut into.
  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    int64_t offset = 0;  // in the flat gradients
    int64_t numel = 0;
    int parameters = 0;  // how many parameters fill it
    int pending = 0;     // of those, not yet accumulated this step
    bool launched = false;
    std::unique_ptr<GradientCodec> codec;
  };
  void parameter_ready(size_t bucket);
  void launch(Bucket& bucket);

  FlatModel& model_;
  FlatOptimizer& optimizer_;
  Communicator& group_;
  std::vector<Bucket> buckets_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<size_t> launch_order_;
  bool enabled_ = true;
  bool overlap_ = true;  // bucket indices in the order they were launched this step
};

}  // namespace colo::dist
