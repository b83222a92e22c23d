#pragma once
// What estimating one job's [job.model] table gave (model_estimates.h), as
// the job store keeps it.

#include <cstdint>
#include <optional>
#include <string>

namespace colo::sched {

struct ModelEstimate {
  std::optional<int64_t> bytes;  // the model's peak, without any margin; nullopt = cannot tell
  std::string reason;            // how it was made, or why it cannot be told
  bool transient = false;        // unknown for now, another attempt may tell (it ran out of time): not stored
};

}  // namespace colo::sched
