#pragma once
// Synthetic data sets of any shape and class count, for benchmarks and tests.

#include "colo/data/data_spec.h"
#include "colo/data/dataset.h"

namespace colo::data {

// A learnable synthetic data set, the same for the same spec and seed.
// Feature data: float32 samples = class prototype + unit Gaussian noise.
// Token data (spec.tokens): int64 sequences of random tokens in which a
// quarter of the positions hold tokens drawn from the class's own set.
Dataset make_synthetic(const DataSpec& spec);

}  // namespace colo::data
