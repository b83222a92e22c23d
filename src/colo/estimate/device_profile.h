#pragma once
// What a GPU adds to every job's footprint, outside the job's own tensors.

#include <cstdint>
#include <string>

namespace colo::estimate {

struct DeviceProfile {
  std::string name;
  int64_t context_bytes = 0;            // CUDA context, kernels and library handles (not in the allocator)
  int64_t library_workspace_bytes = 0;  // cuBLAS/cuDNN workspaces the allocator holds from the first step
};

// The profile measured for colo's reference GPU (see
// bench/results/estimate/README.md for how): used when nothing better is known.
DeviceProfile default_device_profile();

}  // namespace colo::estimate
