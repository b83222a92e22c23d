#include "colo/sched/mps_limit.h"

#include <algorithm>

namespace colo::sched {

std::optional<int64_t> mps_memory_limit(const JobRequest& request, const Thresholds& thresholds) {
  if (request.must_run_alone || !request.mem_bytes) return std::nullopt;
  return std::max(*request.mem_bytes + thresholds.mem_margin_bytes, request.min_free_bytes);
}

bool is_false_oom(int64_t limit_bytes, int64_t gpu_free_bytes) {
  return limit_bytes > 0 && gpu_free_bytes >= limit_bytes / 4;
}

}  // namespace colo::sched
