#include "colo/data/mnist_reader.h"


#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/data/idx_reader.h"

namespace colo::data {
namespace {

std::string find_idx(const std::string& dir, const std::string& stem) {
  if (!is_directory(dir)) {
    throw InputError(dir, "", "data directory does not exist");
  }
  for (const char* suffix : {".gz", ""}) {
    std::string path = dir + "/" + stem + suffix;
    if (path_exists(path)) return path;
  }
  throw InputError(dir + "/" + stem + "[.gz]", "", "IDX file does not exist");
}

Split read_split(const std::string& dir, const std::string& prefix) {
  std::string images_path = find_idx(dir, prefix + "-images-idx3-ubyte");
  std::string labels_path = find_idx(dir, prefix + "-labels-idx1-ubyte");
  at::Tensor images = read_idx(images_path, 3);
  at::Tensor labels = read_idx(labels_path, 1).to(at::kLong);
  if (images.size(0) != labels.size(0)) {
    throw InputError(labels_path, "", "holds " + std::to_string(labels.size(0)) +
                                          " labels but " + images_path + " holds " +
                                          std::to_string(images.size(0)) + " images");
  }
  if (labels.numel() > 0 && labels.max().item<int64_t>() >= 10) {
    throw InputError(labels_path, "", "found a label >= 10");
  }
  return Split{images.unsqueeze(1), labels};
}

}  // namespace

Dataset read_mnist_dir(const std::string& dir, const std::string& name) {
  Dataset dataset;
  dataset.name = name;
  dataset.train = read_split(dir, "train");
  dataset.test = read_split(dir, "t10k");
  dataset.shape = InputShape{{1, dataset.train.inputs.size(2), dataset.train.inputs.size(3)}, 10,
                             false, 0};
  return dataset;
}

}  // namespace colo::data
