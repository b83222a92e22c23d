#pragma once
// A training spec (`colo train spec.toml`): everything one training run needs.

#include <cstdint>
#include <string>

#include "colo/data/data_spec.h"
#include "colo/models/model_spec.h"
#include "colo/train/optimizer.h"
#include "colo/train/schedule.h"

namespace colo::train {

struct TrainSpec {
  std::string source;            // the file it was read from
  models::ModelSpec model;
  data::DataSpec data;
  OptimizerSpec optimizer;
  ScheduleSpec schedule;
  int64_t epochs = 1;
  int64_t max_steps = 0;         // step budget; 0 = no limit beyond the epochs
  int64_t batch_size = 128;
  int64_t eval_batch_size = 1024;
  int64_t checkpoint_every = 1;  // epochs between checkpoints; 0 = never
  uint64_t seed = 0;
  int64_t shuffle_seed = -1;     // batch order and augmentation; -1 = seed
  uint64_t data_order_seed() const { return shuffle_seed >= 0 ? static_cast<uint64_t>(shuffle_seed) : seed; }
  std::string device = "auto";   // auto | cpu | cuda | cuda:N
  std::string output = "runs/train";
};

// Reads and validates a whole spec file. Throws InputError naming the file,
// the field and what was expected, before anything is written anywhere.
TrainSpec parse_train_spec(const std::string& path);

// Reads the training-spec fields of `root` (a whole file) without rejecting
// the keys it does not know, for formats that extend a training spec (a
// sweep file adds [sweep]). The caller calls root.reject_unknown().
TrainSpec parse_train_spec_fields(const SpecTable& root);

// Every field of the format with its default and meaning, for --help and docs.
const char* train_spec_reference();

}  // namespace colo::train
