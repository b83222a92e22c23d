#include "colo/train/loader_options.h"

namespace colo::train {

data::LoaderOptions loader_options(const TrainSpec& spec, const data::Dataset& dataset,
                                   const c10::Device& device, bool training) {
  data::LoaderOptions options;
  options.batch_size = training ? spec.batch_size : spec.eval_batch_size;
  options.shuffle = training;
  options.seed = spec.data_order_seed();
  if (spec.data.normalize) std::tie(options.mean, options.std) = data::channel_stats(dataset.train);
  options.augment = training && spec.data.augment;
  options.pin_memory = spec.data.pin_memory;
  options.prefetch = spec.data.prefetch;
  options.on_device = spec.data.on_device;
  options.device = device;
  return options;
}

}  // namespace colo::train
