#include "colo/sched/oom.h"

#include <array>

namespace colo::sched {

ExitKind classify_exit(int exit_code, const std::string& log_tail) {
  if (exit_code == 0) return ExitKind::kSuccess;
  static constexpr std::array<const char*, 7> kMarkers{
      "CUDA out of memory",         "OutOfMemoryError",       "CUBLAS_STATUS_ALLOC_FAILED",
      "cudaErrorMemoryAllocation",  "CUDNN_STATUS_ALLOC_FAILED",
      "CUDA error: out of memory",  "CUDA_ERROR_OUT_OF_MEMORY",
  };
  for (const char* marker : kMarkers) {
    if (log_tail.find(marker) != std::string::npos) return ExitKind::kOutOfMemory;
  }
  return ExitKind::kFailure;
}

}  // namespace colo::sched
