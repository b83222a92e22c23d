#pragma once
// The [data] table of a training spec.

#include <cstdint>
#include <string>
#include <vector>

#include "colo/core/spec_table.h"

namespace colo::data {

struct DataSpec {
  std::string name = "fashion-mnist";  // a registered data set (see dataset_registry.h)
  std::string path;                    // file-backed sets; empty = the reader's default
  // Synthetic data only.
  std::vector<int64_t> shape{3, 32, 32};
  int64_t classes = 10;
  int64_t train_size = 10000;
  int64_t test_size = 2000;
  bool tokens = false;
  int64_t vocab = 0;
  uint64_t seed = 0;
  // Any data set.
  int64_t train_limit = 0;  // use only the first N training samples (0 = all)
  int64_t test_limit = 0;
  bool normalize = true;    // subtract the training set's per-channel mean, divide by its std
  bool augment = false;     // random crop (padding 4) and horizontal flip, images only
  bool pin_memory = true;   // page-locked host batches when the device is CUDA
  int64_t prefetch = 2;     // batches prepared ahead on a background thread (0 = none)
  bool on_device = false;   // hold the whole data set on the training device
  // "shared" only: the producer's DATA.toml, or its address (ipc://, tcp://),
  // and the seconds of its silence after which training ends with
  // ProducerLost (checkpoints already written stay) or, with
  // load_locally_if_lost (`on_producer_lost = "load_locally"`, a DATA.toml
  // only), goes on decoding its own batches from that file.
  std::string loader;
  double loader_timeout_s = 30;
  bool load_locally_if_lost = false;
};

// Reads a [data] table. Throws InputError for an unknown data set, a field
// that does not apply to it, or a value out of range.
DataSpec parse_data_spec(const SpecTable& table);

// Whether a shared data set's `loader` names the producer's DATA.toml (by
// its ".toml" ending) rather than its address.
bool loader_is_data_file(const std::string& loader);

// What makes two specs the same samples in the same order: equal keys mean
// one loaded data set can serve both (where the data lives, pinning and
// prefetching do not count).
std::string data_key(const DataSpec& spec);

}  // namespace colo::data
