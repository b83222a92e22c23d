#pragma once
// Shuffling, batching, normalising, augmenting loader with prefetch.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include "colo/data/dataset.h"

namespace colo::data {

struct Batch {
  at::Tensor inputs;  // float32 (or int64 tokens) on the loader's device
  at::Tensor labels;  // int64 on the loader's device
};

struct LoaderOptions {
  int64_t batch_size = 128;
  bool shuffle = true;
  bool drop_last = false;
  uint64_t seed = 0;
  std::vector<double> mean;  // per channel; empty = no normalisation
  std::vector<double> std;
  bool augment = false;      // random crop with `crop_padding` and horizontal flip
  int64_t crop_padding = 4;
  bool pin_memory = false;   // only used when `device` is CUDA
  int64_t prefetch = 2;      // batches built ahead on a background thread
  bool on_device = false;    // hold the split on `device` and batch there
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  // Data-parallel sharding: batch k of an epoch is slice `shard_rank` of the
  // k-th global batch of batch_size * shard_count samples of the shared
  // order, so the shards of one epoch are disjoint and together equal the
  // batches of one loader with the summed batch. A sharded loader
  // (shard_count > 1) drops the last partial global batch, so every shard
  // serves the same number of batches.
  int64_t shard_rank = 0;
  int64_t shard_count = 1;
};

// Per-channel mean and standard deviation of a split's inputs after scaling
// uint8 to [0, 1] (channel = dimension 1; a 1-D sample is one channel).
// Empty for token data.
std::pair<std::vector<double>, std::vector<double>> channel_stats(const Split& split);

// Serves the batches of one split, epoch by epoch. The order and the
// augmentation of epoch e depend only on (seed, e), so a resumed run sees the
// same batches. Owned by one thread; the prefetch thread is internal. A
// failure while building a batch is rethrown by next().
class DataLoader {
 public:
  DataLoader(Split split, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t batches_per_epoch() const;
  int64_t samples() const { return split_.size(); }

  // Starts epoch `epoch` (0-based); abandons what is left of the last one.
  void start_epoch(int64_t epoch);

  // The next batch of the current epoch, or nullopt when it is over.
  std::optional<Batch> next();

 private:
  Batch build(int64_t index, at::Generator& gen) const;
  void stop_worker();
  void produce(int64_t epoch);

  Split split_;
  LoaderOptions options_;
  at::Tensor mean_;
  at::Tensor std_;
  at::Tensor order_;
  int64_t next_index_ = 0;
  std::optional<at::Generator> sync_gen_;

  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> ready_;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace colo::data
