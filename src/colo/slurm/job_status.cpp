#include "colo/slurm/job_status.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>

namespace colo::slurm {
namespace {

bool is_final(const std::string& state) {
  return state == "COMPLETED" || state == "FAILED" || state == "OUT_OF_MEMORY";
}

// The Slurm ids of each task of a first submission.
std::vector<std::string> task_ids(const SubmittedJob& job) {
  if (!job.array) return {job.slurm_id};
  std::vector<std::string> ids;
  for (int i = job.array->first; i <= job.array->second; ++i) ids.push_back(job.slurm_id + "_" + std::to_string(i));
  return ids;
}

}  // namespace

std::vector<JobStatus> job_statuses(const std::vector<SubmittedJob>& submitted,
                                    const std::vector<AttemptRecord>& attempts, const std::vector<QueueRow>& queue) {
  std::map<std::string, const AttemptRecord*> by_id;
  for (const auto& a : attempts) by_id[a.slurm_id] = &a;
  std::map<std::string, const QueueRow*> queued;
  for (const auto& row : queue) queued[row.job_id] = &row;
  std::map<std::string, const SubmittedJob*> submission;
  for (const auto& s : submitted) submission[s.slurm_id] = &s;

  std::vector<JobStatus> out;
  for (const auto& first : submitted) {
    if (!first.retry_of.empty()) continue;
    for (const auto& id : task_ids(first)) {
      JobStatus status;
      status.first_id = id;
      status.name = first.name + (first.array ? "[" + id.substr(id.find('_') + 1) + "]" : "");
      status.gres = first.gres;
      status.mem_bytes = first.mem_bytes;
      std::string current = id;
      const AttemptRecord* last = nullptr;
      for (int hops = 0; hops < 100; ++hops) {  // bounded: a corrupt record cannot loop
        auto a = by_id.find(current);
        if (a == by_id.end()) break;
        last = a->second;
        if (last->peak_bytes) status.peak_bytes = std::max(status.peak_bytes.value_or(0), *last->peak_bytes);
        if (last->energy_j) {
          status.energy_j += *last->energy_j;
          status.energy_known = true;
        }
        if (last->state == "OUT_OF_MEMORY") ++status.oom_retries;
        if (last->retried_as.empty()) break;
        current = last->retried_as;
      }
      status.job_id = current;
      if (last && last->slurm_id == current) {
        status.gres = last->gres;
        status.mem_bytes = last->mem_bytes;
        status.node = last->node;
        status.reason = last->reason;
      } else {
        auto s = submission.find(current.substr(0, current.find('_')));
        if (s != submission.end()) {
          status.gres = s->second->gres;
          status.mem_bytes = s->second->mem_bytes;
        }
      }
      auto q = queued.find(current);
      if (last && last->slurm_id == current && is_final(last->state)) {
        status.state = last->state == "OUT_OF_MEMORY" ? "FAILED" : last->state;
      } else if (q != queued.end()) {
        status.state = q->second->state;
        if (status.state == "PENDING") status.reason = q->second->reason;
        if (status.state == "RUNNING") status.node = q->second->node;
      } else {
        status.state = "LOST";
        status.reason = last ? "Slurm no longer knows it and colo slurm exec recorded no end (node died or job killed)"
                             : "Slurm no longer knows it and it never started";
      }
      out.push_back(std::move(status));
    }
  }
  return out;
}

StatusSummary summarize(const std::vector<JobStatus>& jobs, const std::vector<AttemptRecord>& attempts) {
  StatusSummary s;
  for (const auto& j : jobs) {
    ++s.jobs;
    if (j.state == "COMPLETED") ++s.completed;
    else if (j.state == "FAILED") ++s.failed;
    else if (j.state == "PENDING") ++s.pending;
    else if (j.state == "LOST") ++s.lost;
    else ++s.running;
  }
  // Overlapping attempts on each node GPU: +1 at a start, -1 at an end.
  std::map<std::string, std::vector<std::pair<double, int>>> events;
  double latest = 0;
  for (const auto& a : attempts) latest = std::max({latest, a.start_unix, a.end_unix});
  for (const auto& a : attempts) {
    if (a.state == "OUT_OF_MEMORY") ++s.oom_requeued;
    std::stringstream gpus(a.gpus.empty() ? "?" : a.gpus);
    std::string gpu;
    double end = a.end_unix > 0 ? a.end_unix : latest;
    while (std::getline(gpus, gpu, ',')) {
      events[a.node + "/" + gpu].push_back({a.start_unix, 1});
      events[a.node + "/" + gpu].push_back({end, -1});
    }
  }
  for (auto& [gpu, list] : events) {
    std::sort(list.begin(), list.end());  // an end sorts before a start at the same instant
    int running = 0;
    for (const auto& [t, delta] : list) {
      running += delta;
      s.max_jobs_per_gpu = std::max(s.max_jobs_per_gpu, running);
    }
  }
  return s;
}

}  // namespace colo::slurm
