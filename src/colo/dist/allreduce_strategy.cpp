#include "colo/dist/allreduce_strategy.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <stdexcept>
#include <string>

#include "colo/core/stopwatch.h"

namespace colo::dist {

AllreduceStrategy::AllreduceStrategy(FlatModel& model, FlatOptimizer& optimizer, Communicator& group,
                                     const AllreduceOptions& options)
    : model_(model), optimizer_(optimizer), group_(group), overlap_(options.overlap) {
  // Buckets hold consecutive parameters from the last to the first, the
  // order in which backward produces their gradients.
  const auto& slots = model_.slots();
  int64_t limit = std::max<int64_t>(1, static_cast<int64_t>(options.bucket_mib * 1024 * 1024 / 4));
  std::vector<size_t> bucket_of(slots.size());
  for (size_t i = slots.size(); i-- > 0;) {
    if (buckets_.empty() || buckets_.back().numel + slots[i].numel > limit) {
      buckets_.push_back(Bucket{});
      buckets_.back().offset = slots[i].offset + slots[i].numel;
      buckets_.back().codec = make_gradient_codec(options.compression, options.topk);
    }
    Bucket& bucket = buckets_.back();
    bucket.offset = slots[i].offset;
    bucket.numel += slots[i].numel;
    bucket.parameters += 1;
    bucket_of[i] = buckets_.size() - 1;
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(slots[i].parameter);
    size_t bucket = bucket_of[i];
    accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, bucket](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          parameter_ready(bucket);
          return outputs;
        }));
    accumulators_.push_back(std::move(accumulator));
  }
}

AllreduceStrategy::~AllreduceStrategy() = default;

void AllreduceStrategy::begin_step() {
  model_.zero_grad();
  launch_order_.clear();
  for (auto& bucket : buckets_) {
    bucket.pending = bucket.parameters;
    bucket.launched = false;
  }
}

void AllreduceStrategy::parameter_ready(size_t index) {
  if (!enabled_ || !overlap_) return;
  Bucket& bucket = buckets_[index];
  if (--bucket.pending == 0) {
    launch(bucket);
    launch_order_.push_back(index);
  }
}

void AllreduceStrategy::launch(Bucket& bucket) {
  bucket.codec->launch(model_.gradients().narrow(0, bucket.offset, bucket.numel), group_);
  bucket.launched = true;
}

ExchangeCost AllreduceStrategy::finish_step(int64_t, double lr) {
  Stopwatch clock;
  // Parameters that took no part in this step's graph never fire their
  // hook (and without overlap no hook launches anything); their buckets go
  // now, in index order on every worker.
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (!buckets_[i].launched) {
      launch(buckets_[i]);
      launch_order_.push_back(i);
    }
  }
  ExchangeCost cost;
  for (size_t i : launch_order_) {
    Bucket& bucket = buckets_[i];
    bucket.codec->complete(model_.gradients().narrow(0, bucket.offset, bucket.numel));
    cost.bytes_sent += bucket.codec->bytes_sent(bucket.numel, group_.size());
  }
  model_.gradients().div_(static_cast<double>(group_.size()));
  optimizer_.step(lr);
  cost.communication_s = clock.elapsed_s();
  return cost;
}

std::vector<at::Tensor> AllreduceStrategy::run_state() {
  std::vector<at::Tensor> run{model_.values()};
  for (const auto& t : optimizer_.state()) run.push_back(t);
  return run;
}

// Each bucket's carried tensors in bucket order; `carried` counts them per
// bucket, so buckets that carry nothing yet (or never) take no slot.
StrategyState AllreduceStrategy::state() const {
  StrategyState state;
  std::vector<int64_t> counts;
  for (const auto& bucket : buckets_) {
    auto carried = bucket.codec->carried();
    counts.push_back(static_cast<int64_t>(carried.size()));
    for (auto& t : carried) state.tensors.push_back(t);
  }
  state.values["carried"] = counts;
  return state;
}

void AllreduceStrategy::restore(const StrategyState& state) {
  auto counts = state.values.value("carried", std::vector<int64_t>{});
  if (counts.size() != buckets_.size()) {
    throw std::invalid_argument("the checkpoint's all-reduce has " + std::to_string(counts.size()) +
                                " buckets, this one " + std::to_string(buckets_.size()) +
                                " (was [allreduce] bucket_mib changed?)");
  }
  size_t next = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    std::vector<at::Tensor> carried;
    for (int64_t k = 0; k < counts[i]; ++k) {
      if (next >= state.tensors.size()) throw std::invalid_argument("the checkpoint lacks an all-reduce tensor");
      at::Tensor t = state.tensors[next++];
      if (t.numel() != buckets_[i].numel) {
        throw std::invalid_argument("the checkpoint's bucket " + std::to_string(i) + " carries " +
                                    std::to_string(t.numel()) + " values, this one " +
                                    std::to_string(buckets_[i].numel));
      }
      carried.push_back(t.to(model_.gradients().device()));
    }
    buckets_[i].codec->restore(carried);
  }
}

}  // namespace colo::dist
