#pragma once
// How much device memory an MPS client may pin (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT),
// so that a job that outgrows its estimate dies of its own OOM instead of
// starving its neighbours.

#include <cstdint>
#include <optional>

#include "colo/sched/policy.h"

namespace colo::sched {

// The limit for `request`: its estimate plus the placement margin; under
// the peak + margin recovery rule, at least the free memory it was placed
// for. None for a job of unknown size or one recovering alone on a GPU
// (it may use the whole device).
std::optional<int64_t> mps_memory_limit(const JobRequest& request, const Thresholds& thresholds);

// Whether an OOM death under a pinned limit of `limit_bytes` was a false
// OOM: its GPU still had at least a quarter of the limit free, so the job
// would most likely have fitted without the limit (its estimate was too
// small), rather than the GPU being full.
bool is_false_oom(int64_t limit_bytes, int64_t gpu_free_bytes);

}  // namespace colo::sched
