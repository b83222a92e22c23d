#include "colo/sched/mps_limit.h"

#include <algorithm>

namespace colo::sched {

std::optional<int64_t> mps_memory_limit(const JobRequest& request, const Thresholds& thresholds) {
  if (request.must_run_alone || !request.mem_bytes) return std::nullopt;
  return std::max(*request.mem_bytes + thresholds.mem_margin_bytes, request.min_free_bytes);
}

}  // namespace colo::sched
