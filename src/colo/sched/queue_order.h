#pragma once
// The order in which waiting jobs are tried, the same in the runner and the
// simulator: the recovery queue (jobs that died of OOM) first, then higher
// priority, then earlier submission, then lower id.

#include <cstdint>
#include <tuple>

namespace colo::sched {

struct QueueKey {
  bool recovering = false;  // died of OOM and waits for its retry
  int priority = 0;
  double submit_s = 0;
  int64_t id = 0;

  // True when this job is tried before `other`.
  bool operator<(const QueueKey& other) const {
    return std::make_tuple(!recovering, -priority, submit_s, id) <
           std::make_tuple(!other.recovering, -other.priority, other.submit_s, other.id);
  }
};

}  // namespace colo::sched
