#include "colo/sched/collocation_mode.h"

#include <stdexcept>

namespace colo::sched {

CollocationMode collocation_mode_from_string(const std::string& name) {
  if (name == "exclusive") return CollocationMode::kExclusive;
  if (name == "shared") return CollocationMode::kShared;
  if (name == "mps") return CollocationMode::kMps;
  throw std::invalid_argument("unknown mode \"" + name + "\" (known: exclusive, shared, mps)");
}

std::string to_string(CollocationMode mode) {
  switch (mode) {
    case CollocationMode::kExclusive: return "exclusive";
    case CollocationMode::kShared: return "shared";
    case CollocationMode::kMps: return "mps";
  }
  return "?";
}

}  // namespace colo::sched
