#pragma once
// One randomly drawn training job of colo's zoo, for measuring and
// estimating its peak GPU memory (bench/estimate/).

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace colo::bench {

struct MemoryConfig {
  int64_t row = 0;
  std::string model;              // mlp | lenet | resnet | transformer
  std::string activation = "relu";
  double dropout = 0;
  std::vector<int64_t> widths;    // mlp
  int64_t depth = 18;             // resnet
  double width = 1;               // resnet
  int64_t layers = 2, d_model = 64, heads = 4, ff_dim = 0, patch_size = 4;  // transformer
  std::vector<int64_t> shape;     // one sample
  int64_t batch_size = 128;
  int64_t eval_batch_size = 1024;
  int64_t test_size = 1024;
  std::string optimizer = "sgd";
  double momentum = 0, weight_decay = 0;
  bool nesterov = false;

  // A complete `colo train` spec: synthetic data, 3 steps, no checkpoint.
  std::string to_toml(const std::string& output) const;
  // The CSV columns describing the job, in header order.
  static std::vector<std::string> csv_header();
  std::vector<std::string> csv_values() const;
  // Reads the columns csv_header() names from a parsed CSV row.
  static MemoryConfig from_csv(const std::map<std::string, std::string>& row);
};

// Draws job `row` of a data set with seed `seed`: families, sizes and
// optimisers spread so that peaks range from megabytes to tens of gigabytes.
MemoryConfig draw_memory_config(uint64_t seed, int64_t row);

// Minimal CSV (no quoting needed: no value contains a comma or a quote).
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path);

}  // namespace colo::bench
