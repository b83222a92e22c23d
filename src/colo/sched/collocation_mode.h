#pragma once
// How jobs placed on the same GPU share it.

#include <string>

namespace colo::sched {

enum class CollocationMode {
  kExclusive,  // one job per GPU, whatever the policy
  kShared,     // plain time-slicing: concurrent jobs also pay a context-switch overhead
  kMps,        // MPS: kernels of concurrent jobs overlap
};

// "exclusive" | "shared" | "mps"; throws std::invalid_argument otherwise.
CollocationMode collocation_mode_from_string(const std::string& name);
std::string to_string(CollocationMode mode);

}  // namespace colo::sched
