#pragma once
// Reader for the IDX format of MNIST and Fashion-MNIST (gzip or raw).

#include <string>

#include <ATen/Tensor.h>

namespace colo::data {

// Reads one IDX file of unsigned bytes (magic 0x0000080N, N dimensions) into
// a uint8 tensor of those dimensions. A gzip-compressed file is inflated on
// the fly. Throws InputError naming the file for a missing file, a wrong
// magic number, an unexpected number of dimensions (`expected_dims`, 0 for
// any), or data shorter than the header promises.
at::Tensor read_idx(const std::string& path, int expected_dims);

// Writes `tensor` (uint8, any rank) as a raw IDX file. For tests and tools.
void write_idx(const std::string& path, const at::Tensor& tensor);

}  // namespace colo::data
