#include "colo/sched/throughput_watch.h"

#include <algorithm>

#include "colo/core/table.h"

namespace colo::sched {

bool ThroughputWatch::joined(int gpu, int64_t id, const std::vector<JobThroughput>& others, double now_s) {
  if (others.empty()) return false;
  Join join{gpu, id, {}, 0, now_s};
  for (const auto& job : others) {
    if (!job.normalized) return false;
    join.others.push_back(job.id);
    join.before += *job.normalized;
  }
  joins_.push_back(join);
  return true;
}

std::vector<JoinOutcome> ThroughputWatch::check(int gpu, const std::vector<JobThroughput>& jobs_now, double now_s) {
  std::vector<JoinOutcome> ended;
  auto present = [&](int64_t id) {
    return std::any_of(jobs_now.begin(), jobs_now.end(), [&](const JobThroughput& j) { return j.id == id; });
  };
  bool known = std::all_of(jobs_now.begin(), jobs_now.end(), [](const JobThroughput& j) { return j.normalized.has_value(); });
  for (auto it = joins_.begin(); it != joins_.end();) {
    if (it->gpu != gpu) {
      ++it;
      continue;
    }
    bool all_there = present(it->id) && std::all_of(it->others.begin(), it->others.end(), present);
    if (all_there && !known && now_s - it->since_s < timeout_s_) {
      ++it;
      continue;
    }
    JoinOutcome outcome{it->id, std::nullopt};
    if (all_there && known) {
      double after = 0;
      for (const auto& job : jobs_now) after += *job.normalized;
      if (after < it->before * (1 + min_gain_)) {
        outcome.stopped_growing = "training throughput stopped growing (with job " + std::to_string(it->id) +
                                  " its jobs train " + fixed(after, 2) + " of their speed alone, " +
                                  fixed(it->before, 2) + " before)";
      }
    }
    ended.push_back(outcome);
    it = joins_.erase(it);
  }
  return ended;
}

std::vector<int> ThroughputWatch::watched_gpus() const {
  std::vector<int> gpus;
  for (const auto& join : joins_) {
    if (std::find(gpus.begin(), gpus.end(), join.gpu) == gpus.end()) gpus.push_back(join.gpu);
  }
  return gpus;
}

}  // namespace colo::sched
