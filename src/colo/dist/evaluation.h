#pragma once
// Test-split accuracy of a model, as rank 0 and the simulator measure it.

#include "colo/data/dataset.h"
#include "colo/data/loader.h"
#include "colo/models/classifier.h"

namespace colo::dist {

// Accuracy in [0, 1] on `test` batched with `options` (loss in `*loss`), in
// eval mode; leaves the model in train mode. Callers build `options` once
// (train::loader_options reads the whole training split for its channel
// statistics).
// Options for the test split derived from a training loader's (same
// normalisation and device; in order, unsharded, no augmentation).
data::LoaderOptions test_loader_options(const data::LoaderOptions& training, int64_t eval_batch_size);

double test_accuracy(models::Classifier& model, const data::Split& test, const data::LoaderOptions& options,
                     double* loss);

}  // namespace colo::dist
