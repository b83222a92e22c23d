#pragma once
// A labelled data set held in memory as tensors.

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

namespace colo::data {

// One split of a data set. `inputs` is [N, ...]: uint8 images (the loader
// scales them to [0, 1]), float32 features, or int64 token ids; `labels` is
// int64 [N] with values in [0, classes).
struct Split {
  at::Tensor inputs;
  at::Tensor labels;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// What a model needs to know about its input.
struct InputShape {
  std::vector<int64_t> sample_shape;  // one sample, e.g. {1, 28, 28}
  int64_t classes = 0;
  bool tokens = false;  // inputs are token ids in [0, vocab)
  int64_t vocab = 0;
};

// What a data set looks like, known before reading it.
struct DatasetShape {
  InputShape input;
  int64_t train_size = 0;
  int64_t test_size = 0;
  int64_t stored_bytes_per_sample = 0;  // as the reader holds it (uint8 images: 1 per value)
};

struct Dataset {
  std::string name;
  Split train;
  Split test;
  InputShape shape;
};

}  // namespace colo::data
