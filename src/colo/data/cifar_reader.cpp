#include "colo/data/cifar_reader.h"

#include <fstream>

#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/core/files.h"

namespace colo::data {

Split read_cifar_batches(const std::vector<std::string>& paths) {
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> labels;
  for (const auto& path : paths) {
    if (!is_regular_file(path)) {
      throw InputError(path, "", "CIFAR-10 batch file does not exist");
    }
    int64_t bytes = file_size(path);
    if (bytes == 0 || bytes % kCifarRecordBytes != 0) {
      throw InputError(path, "", "expected a whole number of " + std::to_string(kCifarRecordBytes) +
                                     "-byte CIFAR-10 records, found " + std::to_string(bytes) +
                                     " bytes (truncated?)");
    }
    int64_t records = bytes / kCifarRecordBytes;
    at::Tensor raw = at::empty({records, kCifarRecordBytes}, at::kByte);
    std::ifstream in(path, std::ios::binary);
    in.read(static_cast<char*>(raw.data_ptr()), bytes);
    if (in.gcount() != bytes) throw InputError(path, "", "cannot read the whole file");
    at::Tensor label = raw.select(1, 0).to(at::kLong);
    if (label.max().item<int64_t>() >= 10) {
      throw InputError(path, "", "found a label >= 10; not a CIFAR-10 batch file");
    }
    labels.push_back(label);
    inputs.push_back(raw.narrow(1, 1, kCifarRecordBytes - 1).reshape({records, 3, 32, 32}));
  }
  return Split{at::cat(inputs), at::cat(labels)};
}

Dataset read_cifar10(const std::string& dir) {
  std::vector<std::string> train_files;
  for (int i = 1; i <= 5; ++i) train_files.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  Dataset dataset;
  dataset.name = "cifar10";
  dataset.train = read_cifar_batches(train_files);
  dataset.test = read_cifar_batches({dir + "/test_batch.bin"});
  dataset.shape = InputShape{{3, 32, 32}, 10, false, 0};
  return dataset;
}

void write_cifar_batch(const std::string& path, const Split& split) {
  int64_t n = split.size();
  at::Tensor raw = at::empty({n, kCifarRecordBytes}, at::kByte);
  raw.select(1, 0).copy_(split.labels.to(at::kByte));
  raw.narrow(1, 1, kCifarRecordBytes - 1).copy_(split.inputs.reshape({n, -1}).to(at::kByte));
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(raw.data_ptr()), raw.numel());
}

}  // namespace colo::data
