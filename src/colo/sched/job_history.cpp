#include "colo/sched/job_history.h"

#include <algorithm>

namespace colo::sched {

JobKeys job_keys(const JobSpec& spec) { return JobKeys{command_key(spec), workload_key(spec)}; }

template <typename T>
std::optional<T> JobHistory::find(const std::map<std::string, T>& learned, const JobKeys& job) const {
  for (const std::string* key : {&job.command, by_workload_ ? &job.workload : nullptr}) {
    if (key == nullptr || key->empty()) continue;
    auto found = learned.find(*key);
    if (found != learned.end()) return found->second;
  }
  return std::nullopt;
}

void JobHistory::learn_share(const JobKeys& job, double share) {
  if (!job.command.empty()) shares_[job.command] = share;
  if (!job.workload.empty()) shares_[job.workload] = share;
}

std::optional<double> JobHistory::share(const JobKeys& job) const { return find(shares_, job); }

void JobHistory::learn_peak(const JobKeys& job, int64_t peak_bytes) {
  if (job.command.empty()) return;
  int64_t& learned = peaks_[job.command];
  learned = std::max(learned, peak_bytes);
}

std::optional<int64_t> JobHistory::reservation(const JobKeys& job) const {
  if (job.command.empty()) return std::nullopt;
  auto found = peaks_.find(job.command);
  if (found == peaks_.end()) return std::nullopt;
  return found->second + static_cast<int64_t>(static_cast<double>(found->second) * kPeakMargin);
}

void JobHistory::learn_alone_rate(const JobKeys& job, double samples_per_s) {
  if (!job.command.empty()) alone_rates_[job.command] = samples_per_s;
  if (!job.workload.empty()) alone_rates_[job.workload] = samples_per_s;
}

std::optional<double> JobHistory::alone_rate(const JobKeys& job) const { return find(alone_rates_, job); }

}  // namespace colo::sched
