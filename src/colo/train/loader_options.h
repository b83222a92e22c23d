#pragma once
// How a training spec's [data] table and batch sizes become loader options.

#include <c10/core/Device.h>

#include "colo/data/dataset.h"
#include "colo/data/loader.h"
#include "colo/train/train_spec.h"

namespace colo::train {

// Options for the training split (`training`: shuffled, augmented as the spec
// says, batch_size) or the test split (in order, eval_batch_size), normalised
// by the training split's channel statistics when the spec asks.
data::LoaderOptions loader_options(const TrainSpec& spec, const data::Dataset& dataset,
                                   const c10::Device& device, bool training);

}  // namespace colo::train
