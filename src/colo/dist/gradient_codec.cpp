#include "colo/dist/gradient_codec.h"

#include <cmath>

#include <ATen/ATen.h>

namespace colo::dist {
namespace {

int64_t ring_allreduce_bytes(int64_t payload, int64_t world) {
  return world > 1 ? 2 * (world - 1) * payload / world : 0;
}

class DenseCodec : public GradientCodec {
 public:
  void launch(at::Tensor bucket, Communicator& group) override { pending_ = group.allreduce_sum(bucket); }
  void complete(at::Tensor) override { pending_.wait(); }
  int64_t bytes_sent(int64_t numel, int64_t world) const override {
    return ring_allreduce_bytes(numel * 4, world);
  }

 private:
  Pending pending_;
};

// Sends 16-bit gradients; the bucket gets the rounded sum back. Gloo cannot
// reduce bf16, so there every worker gathers everyone's 16-bit values (their
// bits moved as fp16) and adds them up in float32, in rank order.
class HalfCodec : public GradientCodec {
 public:
  explicit HalfCodec(at::ScalarType type) : type_(type) {}
  void launch(at::Tensor bucket, Communicator& group) override {
    wire_ = bucket.to(type_);
    gather_ = type_ == at::kBFloat16 && group.backend() == "gloo";
    if (!gather_) {
      pending_ = group.allreduce_sum(wire_);
      return;
    }
    bits_ = wire_.view(at::kHalf);  // same width; gathering only moves the bits
    gathered_.clear();
    for (int r = 0; r < group.size(); ++r) gathered_.push_back(at::empty_like(bits_));
    pending_ = group.allgather(gathered_, bits_);
  }
  void complete(at::Tensor bucket) override {
    pending_.wait();
    if (gather_) {
      bucket.zero_();
      for (const auto& bits : gathered_) bucket.add_(bits.view(type_).to(at::kFloat));
      gathered_.clear();
    } else {
      bucket.copy_(wire_);
    }
    wire_ = at::Tensor();
  }
  int64_t bytes_sent(int64_t numel, int64_t world) const override {
    return gather_ ? (world - 1) * numel * 2 : ring_allreduce_bytes(numel * 2, world);
  }

 private:
  at::ScalarType type_;
  bool gather_ = false;
  at::Tensor wire_, bits_;
  std::vector<at::Tensor> gathered_;
  Pending pending_;
};

// Sends the k largest entries of (gradient + residual) and keeps the rest as
// the residual for the next step (error feedback); every worker gathers all
// workers' (index, value) pairs and adds them up in rank order, so every
// replica gets the same sum.
class TopKCodec : public GradientCodec {
 public:
  explicit TopKCodec(double fraction) : fraction_(fraction) {}
  void launch(at::Tensor bucket, Communicator& group) override {
    if (!residual_.defined()) residual_ = at::zeros_like(bucket);
    at::Tensor accumulated = bucket + residual_;
    int64_t k = keep(bucket.numel());
    indices_ = std::get<1>(accumulated.abs().topk(k));
    values_ = accumulated.index_select(0, indices_);
    residual_ = accumulated.index_fill_(0, indices_, 0.0);
    gathered_values_.clear();
    gathered_indices_.clear();
    for (int r = 0; r < group.size(); ++r) {
      gathered_values_.push_back(at::empty_like(values_));
      gathered_indices_.push_back(at::empty_like(indices_));
    }
    pending_values_ = group.allgather(gathered_values_, values_);
    pending_indices_ = group.allgather(gathered_indices_, indices_);
  }
  void complete(at::Tensor bucket) override {
    pending_values_.wait();
    pending_indices_.wait();
    bucket.zero_();
    for (size_t r = 0; r < gathered_values_.size(); ++r) {
      bucket.index_add_(0, gathered_indices_[r], gathered_values_[r]);
    }
  }
  int64_t bytes_sent(int64_t numel, int64_t world) const override {
    return (world - 1) * keep(numel) * (4 + 8);
  }
  std::vector<at::Tensor> carried() const override {
    if (!residual_.defined()) return {};
    return {residual_};
  }
  void restore(const std::vector<at::Tensor>& carried) override {
    residual_ = carried.empty() ? at::Tensor() : carried.front();
  }

 private:
  int64_t keep(int64_t numel) const {
    return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(fraction_ * static_cast<double>(numel))));
  }
  double fraction_;
  at::Tensor residual_, values_, indices_;
  std::vector<at::Tensor> gathered_values_, gathered_indices_;
  Pending pending_values_, pending_indices_;
};

}  // namespace

std::unique_ptr<GradientCodec> make_gradient_codec(const std::string& compression, double topk) {
  if (topk > 0) return std::make_unique<TopKCodec>(topk);
  if (compression == "bf16") return std::make_unique<HalfCodec>(at::kBFloat16);
  if (compression == "fp16") return std::make_unique<HalfCodec>(at::kHalf);
  return std::make_unique<DenseCodec>();
}

}  // namespace colo::dist
