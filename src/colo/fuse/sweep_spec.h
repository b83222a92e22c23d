#pragma once
// A sweep file (`colo sweep sweep.toml`): a training spec plus a [sweep]
// table of axes over hyper-parameters; expands into one training spec per
// model configuration.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/fuse/array_trainer.h"
#include "colo/fuse/sweep_plan.h"
#include "colo/train/train_spec.h"

namespace colo::fuse {

struct SweepSpec {
  train::TrainSpec base;
  std::string sampling = "grid";  // grid | random
  int64_t count = 0;              // random: configurations to draw; grid: 0 = all
  uint64_t seed = 0;              // random sampling's generator
  int64_t max_array = 0;          // models per array; 0 = as many as the device fits
  bool cuda_graph = true;
  bool channels_last = false;     // default: true for resnet (measured faster), else false
  bool bf16_autocast = false;     // forward passes in bfloat16 (off: float32, as trained alone)
  bool side_by_side = false;      // all arrays in one data pass, each on its own CUDA stream
  bool halving_enabled = false;
  Halving halving;
  std::vector<SweepAxis> axes;    // in file order
  std::vector<int64_t> only;      // train only these configurations (by index); empty = all
};

// One model of the sweep: its position, the axis values it took, its spec.
struct SweepConfig {
  int64_t index = 0;
  nlohmann::json values;  // axis name -> value
  train::TrainSpec spec;
};

// Reads and validates a sweep file; throws InputError naming the file and
// field before anything runs.
SweepSpec parse_sweep_spec(const std::string& path);

// The configurations: the cartesian product of the axes (grid, first axis
// slowest, capped at `count` when set) or `count` random draws. Throws
// InputError when a value does not fit the model (e.g. widths on a lenet).
std::vector<SweepConfig> expand_sweep(const SweepSpec& spec);

// What must be equal for configurations to share one fused array.
std::string array_key(const train::TrainSpec& spec);

}  // namespace colo::fuse
