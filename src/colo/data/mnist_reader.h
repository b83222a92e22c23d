#pragma once
// MNIST-style data sets (MNIST, Fashion-MNIST) from a directory of IDX files.

#include <string>

#include "colo/data/dataset.h"

namespace colo::data {

// Reads train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte from `dir`, each either
// raw or with a .gz suffix. Inputs are uint8 [N, 1, 28, 28]. Throws
// InputError naming the file that is missing or bad, or when the image and
// label counts differ or a label is >= 10.
Dataset read_mnist_dir(const std::string& dir, const std::string& name);

}  // namespace colo::data
