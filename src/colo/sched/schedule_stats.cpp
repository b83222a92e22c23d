#include "colo/sched/schedule_stats.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace colo::sched {

ScheduledJob scheduled_job_from_json(const nlohmann::json& j) {
  ScheduledJob job;
  job.name = j.value("name", "");
  job.state = j.value("state", "");
  job.gpu = j.value("gpu", -1);
  job.submit_s = j.value("submit_s", 0.0);
  job.start_s = j.value("start_s", -1.0);
  job.end_s = j.value("end_s", -1.0);
  return job;
}

std::vector<std::pair<double, int>> jobs_on_gpu_over_time(const std::vector<ScheduledJob>& jobs, int gpu) {
  std::vector<std::pair<double, int>> events;  // (time, +1 / -1); ends before starts at the same time
  for (const auto& j : jobs) {
    if (j.gpu != gpu || j.start_s < 0 || j.end_s < j.start_s) continue;
    events.emplace_back(j.start_s, 1);
    events.emplace_back(j.end_s, -1);
  }
  std::sort(events.begin(), events.end());
  std::vector<std::pair<double, int>> steps;
  int running = 0;
  for (const auto& [t, change] : events) {
    running += change;
    if (!steps.empty() && steps.back().first == t) {
      steps.back().second = running;
    } else {
      steps.emplace_back(t, running);
    }
  }
  return steps;
}

ScheduleStats schedule_stats(const std::vector<ScheduledJob>& jobs, const std::vector<ScheduledJob>* alone) {
  ScheduleStats stats;
  std::vector<double> waits;
  std::map<std::string, double> alone_run_s;
  if (alone) {
    for (const auto& j : *alone) {
      if (j.state == "COMPLETED" && j.end_s > j.start_s) alone_run_s[j.name] = j.end_s - j.start_s;
    }
  }
  for (const auto& j : jobs) {
    if (j.state != "COMPLETED" || j.start_s < 0 || j.end_s < 0) continue;
    ++stats.completed;
    stats.mean_jct_s += j.end_s - j.submit_s;
    waits.push_back(j.start_s - j.submit_s);
    auto solo = alone_run_s.find(j.name);
    if (solo != alone_run_s.end()) stats.slowdown[j.name] = (j.end_s - j.start_s) / solo->second;
  }
  if (stats.completed > 0) {
    stats.mean_jct_s /= stats.completed;
    for (double w : waits) stats.mean_wait_s += w;
    stats.mean_wait_s /= stats.completed;
    std::sort(waits.begin(), waits.end());
    size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(waits.size()))) - 1;
    stats.p95_wait_s = waits[std::min(rank, waits.size() - 1)];
  }
  std::set<int> gpus;
  for (const auto& j : jobs) {
    if (j.gpu >= 0) gpus.insert(j.gpu);
  }
  double job_time = 0, busy_time = 0;
  for (int g : gpus) {
    auto steps = jobs_on_gpu_over_time(jobs, g);
    for (size_t i = 0; i < steps.size(); ++i) {
      stats.max_jobs_per_gpu = std::max(stats.max_jobs_per_gpu, steps[i].second);
      if (i + 1 < steps.size() && steps[i].second > 0) {
        double dt = steps[i + 1].first - steps[i].first;
        job_time += dt * steps[i].second;
        busy_time += dt;
      }
    }
  }
  if (busy_time > 0) stats.mean_jobs_per_gpu = job_time / busy_time;
  if (!stats.slowdown.empty()) {
    double sum = 0, most = 0;
    for (const auto& [name, s] : stats.slowdown) {
      sum += s;
      most = std::max(most, s);
    }
    stats.mean_slowdown = sum / static_cast<double>(stats.slowdown.size());
    stats.max_slowdown = most;
  }
  return stats;
}

}  // namespace colo::sched
