#include "colo/data/dataset_registry.h"

#include <stdexcept>

#include <ATen/ATen.h>

#include "colo/data/cifar_reader.h"
#include "colo/data/mnist_reader.h"
#include "colo/data/synthetic.h"

namespace colo::data {
namespace {

// Adding a data set: one reader file, one entry here.
const std::vector<DatasetEntry>& registry() {
  static const std::vector<DatasetEntry> entries = {
      {"fashion-mnist", "Fashion-MNIST, IDX files (gzip or raw), 28x28 grey, 10 classes",
       "/usr/share/datasets/fashion-mnist", false,
       [](const DataSpec& s) { return read_mnist_dir(s.path, "fashion-mnist"); }},
      {"mnist", "MNIST, IDX files (gzip or raw), 28x28 grey, 10 classes", "", false,
       [](const DataSpec& s) { return read_mnist_dir(s.path, "mnist"); }},
      {"cifar10", "CIFAR-10 binary batches (data_batch_1..5.bin, test_batch.bin)", "", false,
       [](const DataSpec& s) { return read_cifar10(s.path); }},
      {"synthetic", "random class-dependent data of any shape (benchmarks)", "", true,
       [](const DataSpec& s) { return make_synthetic(s); }},
  };
  return entries;
}

Split limit(const Split& split, int64_t count) {
  if (count <= 0 || count >= split.size()) return split;
  return Split{split.inputs.narrow(0, 0, count), split.labels.narrow(0, 0, count)};
}

}  // namespace

std::vector<std::string> dataset_names() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.name);
  return names;
}

const DatasetEntry& find_dataset(const std::string& name) {
  for (const auto& entry : registry()) {
    if (entry.name == name) return entry;
  }
  throw std::out_of_range("unknown data set " + name);
}

Dataset load_dataset(const DataSpec& spec) {
  Dataset dataset = find_dataset(spec.name).read(spec);
  dataset.train = limit(dataset.train, spec.train_limit);
  dataset.test = limit(dataset.test, spec.test_limit);
  return dataset;
}

}  // namespace colo::data
