#pragma once
// What a GPU adds to every job's footprint, outside the job's own tensors.

#include <cstdint>
#include <map>
#include <string>

#include "colo/estimate/conv_workspace.h"

namespace colo::estimate {

struct DeviceProfile {
  std::string name;
  int64_t context_bytes = 0;            // CUDA context, kernels and library handles (not in the allocator)
  int64_t library_workspace_bytes = 0;  // cuBLAS/cuDNN workspaces the allocator holds from the first step
  // Measured reservation over the modelled one, keyed "model/phase" (e.g.
  // "resnet/evaluation": where the replay puts the peak) or "model": what the
  // real allocator's fragmentation, kernel workspaces and C++ temporaries add
  // on this device. 1 where unmeasured.
  std::map<std::string, double> fragmentation{};
  // cuDNN's workspace per convolution shape and batch on this device.
  ConvWorkspaceTable conv_workspace{};
  // The same for bf16 convolutions (fp16's taken as bf16's); empty where not
  // measured: the float32 table scaled by the element size stands in.
  ConvWorkspaceTable conv_workspace_half{};
  int64_t cublas_workspace_bytes = 0;  // one cuBLAS handle's workspace as measured; 0 in profiles older than it

  // cuBLAS's workspace per handle. PyTorch takes one from the caching
  // allocator when a thread runs its first matrix product (the forward's
  // thread, then autograd's) and keeps it. The measured size where the
  // profile has it; else half the library workspace (which holds those two and
  // small-pool segments), in whole MiB.
  int64_t gemm_workspace_bytes() const {
    if (cublas_workspace_bytes > 0) return cublas_workspace_bytes;
    return library_workspace_bytes / 2 / (1 << 20) * (1 << 20);
  }

  double fragmentation_of(const std::string& model, const std::string& phase) const {
    for (const std::string& key : {model + "/" + phase, model}) {
      if (auto it = fragmentation.find(key); it != fragmentation.end()) return it->second;
    }
    return 1.0;
  }
};

// The profile measured for colo's reference GPU (see
// bench/results/estimate/README.md for how): used when nothing better is known.
DeviceProfile default_device_profile();

}  // namespace colo::estimate
