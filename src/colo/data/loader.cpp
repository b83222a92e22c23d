#include "colo/data/loader.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace colo::data {
namespace {

at::Tensor as_float(const at::Tensor& inputs) {
  if (inputs.scalar_type() == at::kByte) return inputs.to(at::kFloat).div_(255.0);
  return inputs.to(at::kFloat);
}

// Shape that broadcasts a per-channel vector over a batch of samples of `dims` dimensions.
std::vector<int64_t> channel_view(int64_t channels, int64_t sample_dims) {
  std::vector<int64_t> view{1, channels};
  for (int64_t d = 1; d < sample_dims; ++d) view.push_back(1);
  return view;
}

uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
  return seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch) + 1;
}

// Random crop after zero padding, then random horizontal flip; images [B,C,H,W].
at::Tensor augment_images(const at::Tensor& images, int64_t padding, at::Generator& gen) {
  int64_t b = images.size(0), h = images.size(2), w = images.size(3);
  at::Tensor padded = at::constant_pad_nd(images, {padding, padding, padding, padding}, 0.0);
  auto cpu_long = at::TensorOptions().dtype(at::kLong);
  at::Tensor dy = at::randint(0, 2 * padding + 1, {b}, gen, cpu_long).to(images.device());
  at::Tensor dx = at::randint(0, 2 * padding + 1, {b}, gen, cpu_long).to(images.device());
  at::Tensor flip = (at::rand({b}, gen) < 0.5).to(images.device());
  auto dev_long = cpu_long.device(images.device());
  at::Tensor rows = dy.view({b, 1}) + at::arange(h, dev_long).view({1, h});
  at::Tensor cols = dx.view({b, 1}) + at::arange(w, dev_long).view({1, w});
  cols = at::where(flip.view({b, 1}), cols.flip({1}), cols);
  at::Tensor batch_index = at::arange(b, dev_long).view({b, 1, 1});
  // [B, C, H+2p, W+2p] -> [B, H, W, C] via advanced indexing, then back to NCHW.
  at::Tensor picked = padded.permute({0, 2, 3, 1})
                          .index({batch_index, rows.view({b, h, 1}), cols.view({b, 1, w})});
  return picked.permute({0, 3, 1, 2}).contiguous();
}

}  // namespace

std::pair<std::vector<double>, std::vector<double>> channel_stats(const Split& split) {
  if (split.inputs.scalar_type() == at::kLong || split.size() == 0) return {};
  at::Tensor x = split.inputs;
  int64_t channels = x.dim() >= 3 ? x.size(1) : 1;
  std::vector<double> mean, std;
  for (int64_t c = 0; c < channels; ++c) {
    at::Tensor channel = (x.dim() >= 3 ? x.select(1, c) : x).to(at::kDouble);
    if (x.scalar_type() == at::kByte) channel.div_(255.0);
    mean.push_back(channel.mean().item<double>());
    std.push_back(std::max(channel.std().item<double>(), 1e-6));
  }
  return {mean, std};
}

DataLoader::DataLoader(Split split, LoaderOptions options)
    : split_(std::move(split)), options_(std::move(options)) {
  if (options_.shard_count < 1 || options_.shard_rank < 0 ||
      options_.shard_rank >= options_.shard_count) {
    throw std::invalid_argument("DataLoader: shard " + std::to_string(options_.shard_rank) +
                                " of " + std::to_string(options_.shard_count) + " does not exist");
  }
  if (options_.on_device) {
    split_.inputs = split_.inputs.to(options_.device);
    split_.labels = split_.labels.to(options_.device);
    options_.prefetch = 0;
  }
  if (!options_.mean.empty()) {
    int64_t channels = static_cast<int64_t>(options_.mean.size());
    auto view = channel_view(channels, split_.inputs.dim() - 1);
    auto opts = at::TensorOptions().dtype(at::kDouble);
    mean_ = at::tensor(options_.mean, opts).to(at::kFloat).view(view).to(split_.inputs.device());
    std_ = at::tensor(options_.std, opts).to(at::kFloat).view(view).to(split_.inputs.device());
  }
}

DataLoader::~DataLoader() { stop_worker(); }

int64_t DataLoader::batches_per_epoch() const {
  int64_t n = split_.size(), b = options_.batch_size;
  if (options_.shard_count > 1) return n / (b * options_.shard_count);
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

Batch DataLoader::build(int64_t index, at::Generator& gen) const {
  int64_t start = (index * options_.shard_count + options_.shard_rank) * options_.batch_size;
  int64_t count = std::min(options_.batch_size, split_.size() - start);
  at::Tensor picks = order_.narrow(0, start, count);
  at::Tensor inputs = split_.inputs.index_select(0, picks);
  at::Tensor labels = split_.labels.index_select(0, picks);
  if (inputs.scalar_type() != at::kLong) {
    inputs = as_float(inputs);
    if (mean_.defined()) inputs = (inputs - mean_) / std_;
    if (options_.augment && inputs.dim() == 4) {
      inputs = augment_images(inputs, options_.crop_padding, gen);
    }
  }
  bool pin = options_.pin_memory && options_.device.is_cuda() && !inputs.is_cuda();
  if (pin) {
    inputs = inputs.pin_memory();
    labels = labels.pin_memory();
  }
  return Batch{inputs, labels};
}

void DataLoader::stop_worker() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void DataLoader::produce(int64_t epoch) {
  try {
    at::Generator gen = at::detail::createCPUGenerator(epoch_seed(options_.seed, epoch) ^ 0xA5A5);
    for (int64_t i = 0; i < batches_per_epoch(); ++i) {
      Batch batch = build(i, gen);
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] {
        return stop_ || static_cast<int64_t>(ready_.size()) < options_.prefetch;
      });
      if (stop_) return;
      ready_.push_back(std::move(batch));
      changed_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
    changed_.notify_all();
  }
}

void DataLoader::start_epoch(int64_t epoch) {
  stop_worker();
  ready_.clear();
  stop_ = false;
  error_ = nullptr;
  next_index_ = 0;
  at::Generator order_gen = at::detail::createCPUGenerator(epoch_seed(options_.seed, epoch));
  order_ = options_.shuffle ? at::randperm(split_.size(), order_gen, at::kLong)
                            : at::arange(split_.size(), at::kLong);
  // A split held on the device is batched there without a host transfer per
  // batch.
  if (split_.inputs.device() != order_.device()) order_ = order_.to(split_.inputs.device());
  if (options_.prefetch > 0) {
    sync_gen_.reset();
    worker_ = std::thread([this, epoch] { produce(epoch); });
  } else {
    sync_gen_ = at::detail::createCPUGenerator(epoch_seed(options_.seed, epoch) ^ 0xA5A5);
  }
}

std::optional<Batch> DataLoader::next() {
  if (next_index_ >= batches_per_epoch()) return std::nullopt;
  Batch batch;
  if (options_.prefetch > 0) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !ready_.empty() || error_; });
    if (ready_.empty()) std::rethrow_exception(error_);
    batch = std::move(ready_.front());
    ready_.pop_front();
    changed_.notify_all();
  } else {
    batch = build(next_index_, *sync_gen_);
  }
  ++next_index_;
  bool async = batch.inputs.is_pinned();
  batch.inputs = batch.inputs.to(options_.device, /*non_blocking=*/async);
  batch.labels = batch.labels.to(options_.device, /*non_blocking=*/async);
  return batch;
}

}  // namespace colo::data
