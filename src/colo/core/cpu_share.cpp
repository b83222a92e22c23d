#include "colo/core/cpu_share.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace colo {

size_t available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void share_cores(EnvironmentOverrides& env, size_t processes) {
  if (env.count("OMP_NUM_THREADS") || std::getenv("OMP_NUM_THREADS")) return;
  size_t threads = std::max<size_t>(1, available_cores() / std::max<size_t>(1, processes));
  env["OMP_NUM_THREADS"] = std::to_string(threads);
}

}  // namespace colo
