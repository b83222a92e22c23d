#pragma once
// Telling a GPU out-of-memory death from other failures.

#include <string>

namespace colo::sched {

enum class ExitKind { kSuccess, kOutOfMemory, kFailure };

// Classifies a finished job from its exit code (128 + signal for a signal)
// and the tail of its log. Out of memory: a non-zero exit whose log holds
// one of the messages CUDA, PyTorch, cuBLAS or cuDNN print when device
// memory runs out ("CUDA out of memory", "OutOfMemoryError",
// "CUBLAS_STATUS_ALLOC_FAILED", "cudaErrorMemoryAllocation",
// "CUDNN_STATUS_ALLOC_FAILED", "out of memory" from the CUDA runtime).
ExitKind classify_exit(int exit_code, const std::string& log_tail);

}  // namespace colo::sched
