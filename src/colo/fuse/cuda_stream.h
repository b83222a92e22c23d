#pragma once
// The CUDA stream colo's own kernels launch on: PyTorch's current stream on
// the current device, so they order with the ATen work around them.

#if COLO_HAS_CUDA
#include <c10/cuda/CUDAStream.h>

namespace colo::fuse {

// The current stream as the opaque handle the kernel launchers take.
inline void* current_cuda_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

}  // namespace colo::fuse
#endif
