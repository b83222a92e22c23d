#pragma once
// Reader for the CIFAR-10 binary format.

#include <string>
#include <vector>

#include "colo/data/dataset.h"

namespace colo::data {

// Bytes of one CIFAR-10 record: a label byte, then 3x32x32 pixel bytes
// (all red, then green, then blue, each row-major).
inline constexpr int64_t kCifarRecordBytes = 1 + 3 * 32 * 32;

// Reads CIFAR-10 binary batch files into one split: uint8 inputs
// [N, 3, 32, 32] and int64 labels. Throws InputError naming the file when it
// is missing, its size is not a whole number of records, or a label is >= 10.
Split read_cifar_batches(const std::vector<std::string>& paths);

// Reads a CIFAR-10 directory: data_batch_1..5.bin for training and
// test_batch.bin for testing.
Dataset read_cifar10(const std::string& dir);

// Writes `split` (uint8 [N,3,32,32], labels < 10) as one CIFAR-10 batch file.
void write_cifar_batch(const std::string& path, const Split& split);

}  // namespace colo::data
