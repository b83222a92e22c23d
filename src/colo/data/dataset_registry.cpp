#include "colo/data/dataset_registry.h"

#include <algorithm>
#include <stdexcept>

#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/data/cifar_reader.h"
#include "colo/data/image_folder.h"
#include "colo/data/loader_server.h"
#include "colo/data/mnist_reader.h"
#include "colo/data/synthetic.h"

namespace colo::data {
namespace {

DatasetShape image_shape(std::vector<int64_t> sample, int64_t classes, int64_t train, int64_t test) {
  DatasetShape shape;
  shape.input.sample_shape = std::move(sample);
  shape.input.classes = classes;
  shape.train_size = train;
  shape.test_size = test;
  shape.stored_bytes_per_sample = 1;
  for (int64_t d : shape.input.sample_shape) shape.stored_bytes_per_sample *= d;
  return shape;
}

DatasetShape synthetic_shape(const DataSpec& s) {
  DatasetShape shape;
  shape.input.sample_shape = s.shape;
  shape.input.classes = s.classes;
  shape.input.tokens = s.tokens;
  shape.input.vocab = s.vocab;
  shape.train_size = s.train_size;
  shape.test_size = s.test_size;
  shape.stored_bytes_per_sample = s.tokens ? 8 : 4;
  for (int64_t d : s.shape) shape.stored_bytes_per_sample *= d;
  return shape;
}

// A shared loader's images as its DATA.toml describes them (an address
// alone says nothing until its producer answers).
DatasetShape shared_shape(const DataSpec& s) {
  if (!loader_is_data_file(s.loader)) {
    throw InputError(s.loader, "loader", "the producer's DATA.toml, to know the images' shape without a producer");
  }
  LoaderServeSpec serve = parse_loader_serve_spec(s.loader);
  ImageFolder folder = scan_image_folder(serve.pipeline.root);
  return image_shape({3, serve.pipeline.size, serve.pipeline.size}, static_cast<int64_t>(folder.classes.size()),
                     folder.size(), 0);
}

// Adding a data set: one reader file, one entry here.
const std::vector<DatasetEntry>& registry() {
  static const std::vector<DatasetEntry> entries = {
      {"fashion-mnist", "Fashion-MNIST, IDX files (gzip or raw), 28x28 grey, 10 classes",
       "/usr/share/datasets/fashion-mnist", false,
       [](const DataSpec& s) { return read_mnist_dir(s.path, "fashion-mnist"); },
       [](const DataSpec&) { return image_shape({1, 28, 28}, 10, 60000, 10000); }},
      {"mnist", "MNIST, IDX files (gzip or raw), 28x28 grey, 10 classes", "", false,
       [](const DataSpec& s) { return read_mnist_dir(s.path, "mnist"); },
       [](const DataSpec&) { return image_shape({1, 28, 28}, 10, 60000, 10000); }},
      {"cifar10", "CIFAR-10 binary batches (data_batch_1..5.bin, test_batch.bin)", "", false,
       [](const DataSpec& s) { return read_cifar10(s.path); },
       [](const DataSpec&) { return image_shape({3, 32, 32}, 10, 50000, 10000); }},
      {"synthetic", "random class-dependent data of any shape (benchmarks)", "", true,
       [](const DataSpec& s) { return make_synthetic(s); },
       synthetic_shape},
      {"shared", "batches from a shared loader's producer (colo loader serve; colo train and colo sweep)", "", false,
       [](const DataSpec& s) -> Dataset {
         throw InputError(s.loader, "name", "a data set read into memory: only `colo train` and `colo sweep` read a shared loader");
       },
       shared_shape, /*streamed=*/true},
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

DatasetShape dataset_shape(const DataSpec& spec) {
  DatasetShape shape = find_dataset(spec.name).shape(spec);
  if (spec.train_limit > 0) shape.train_size = std::min(shape.train_size, spec.train_limit);
  if (spec.test_limit > 0) shape.test_size = std::min(shape.test_size, spec.test_limit);
  return shape;
}

Dataset load_dataset(const DataSpec& spec) {
  Dataset dataset = find_dataset(spec.name).read(spec);
  dataset.train = limit(dataset.train, spec.train_limit);
  dataset.test = limit(dataset.test, spec.test_limit);
  return dataset;
}

}  // namespace colo::data
