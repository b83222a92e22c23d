#include "colo/fuse/cuda/optimizer_kernels.h"

namespace colo::fuse::cuda {

std::vector<OptimizerLaunch> plan_optimizer_launches(const std::vector<OptimizerTensor>& tensors) {
  std::vector<OptimizerLaunch> launches;
  for (const OptimizerTensor& t : tensors) {
    if (t.numel <= 0) continue;
    if (launches.empty() || launches.back().count == kOptimizerTensorsPerLaunch) launches.emplace_back();
    OptimizerLaunch& launch = launches.back();
    OptimizerTensor& slot = launch.tensors[launch.count++];
    slot = t;
    slot.first_block = launch.blocks;
    launch.blocks += (t.numel + kOptimizerBlockElements - 1) / kOptimizerBlockElements;
  }
  return launches;
}

}  // namespace colo::fuse::cuda
