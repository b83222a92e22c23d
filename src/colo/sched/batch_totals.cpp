#include "colo/sched/batch_totals.h"

#include <algorithm>

namespace colo::sched {

BatchTotals::BatchTotals(const std::vector<JobRecord>& jobs) {
  double slowdown_sum = 0;
  int slowdowns = 0;
  for (const auto& j : jobs) {
    completed += j.state == JobState::kCompleted;
    failed += j.state == JobState::kFailed;
    oom_events += j.oom_deaths;
    false_ooms += j.false_ooms;
    lost += !is_final(j.state);
    energy_j += j.energy_j;
    if (j.state == JobState::kCompleted && j.start_s && j.end_s) {
      wait_s += *j.start_s - j.submit_s;
      exec_s += *j.end_s - *j.start_s;
      jct_s += *j.end_s - j.submit_s;
    }
    if (auto factor = j.slowdown(); factor && j.state == JobState::kCompleted) {
      slowdown_sum += *factor;
      ++slowdowns;
      max_slowdown = std::max(max_slowdown.value_or(0.0), *factor);
    }
  }
  if (slowdowns > 0) mean_slowdown = slowdown_sum / slowdowns;
  int n = std::max(completed, 1);
  wait_s /= n;
  exec_s /= n;
  jct_s /= n;
}

nlohmann::json BatchTotals::to_json(const std::string& policy, const std::string& mode, double wall_s) const {
  nlohmann::json summary{{"policy", policy}, {"mode", mode}, {"wall_s", wall_s}, {"total_s", wall_s},
          {"completed", completed}, {"failed", failed}, {"oom_events", oom_events}, {"false_ooms", false_ooms},
          {"oom_unrecovered", failed}, {"jobs_lost", lost}, {"mean_wait_s", wait_s}, {"mean_exec_s", exec_s},
          {"mean_jct_s", jct_s}, {"job_energy_share_j", energy_j}, {"energy_j", energy_j}};
  if (mean_slowdown) summary["mean_slowdown"] = *mean_slowdown;
  if (max_slowdown) summary["max_slowdown"] = *max_slowdown;
  return summary;
}

}  // namespace colo::sched
