#include "colo/sched/recovery.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace colo::sched {

RecoveryRule recovery_rule_from_string(const std::string& name) {
  if (name == "alone") return RecoveryRule::kAlone;
  if (name == "peak-margin") return RecoveryRule::kPeakMargin;
  throw std::invalid_argument("unknown recovery rule \"" + name + "\" (known: alone, peak-margin)");
}

JobState state_after_oom_death(int deaths, const RecoveryOptions& options) {
  return deaths > options.max_retries ? JobState::kFailed : JobState::kOutOfMemory;
}

JobRequest recovery_request(const JobRequest& original, const RecoveryOptions& options, int attempt,
                            int64_t observed_peak_bytes) {
  JobRequest retry = original;
  if (options.rule == RecoveryRule::kAlone) {
    retry.must_run_alone = true;
    return retry;
  }
  double factor = 1.0 + options.margin_fraction * std::max(1, attempt);
  int64_t need = static_cast<int64_t>(std::ceil(static_cast<double>(observed_peak_bytes) * factor));
  retry.mem_bytes = std::max(original.mem_bytes.value_or(0), need);
  retry.min_free_bytes = need;
  return retry;
}

}  // namespace colo::sched
