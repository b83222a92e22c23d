#pragma once
// What earlier jobs taught the scheduler about later ones: measured SM
// shares, peak memory and training throughput alone, found again for a job
// of the same command, else of the same model. One for the runner and the
// simulator, so that both learn by the same rules.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "colo/sched/job_spec.h"

namespace colo::sched {

// What makes jobs alike: the same command (command_key), and the same model
// (workload_key; "" when colo does not know the job's model).
struct JobKeys {
  std::string command;
  std::string workload;
};

// A submitted job's keys.
JobKeys job_keys(const JobSpec& spec);

class JobHistory {
 public:
  // The fraction a learned peak is given on top when it becomes a later
  // job's memory reservation.
  static constexpr double kPeakMargin = 0.10;

  // `by_workload` false: only the same command counts (--no-share-prediction).
  explicit JobHistory(bool by_workload = true) : by_workload_(by_workload) {}

  // The latest share measured wins, for its command and its model.
  void learn_share(const JobKeys& job, double share);
  // The share of the same command, else of the same model; nullopt when neither was measured.
  std::optional<double> share(const JobKeys& job) const;

  // The largest peak a completed or measured job of the command reached.
  void learn_peak(const JobKeys& job, int64_t peak_bytes);
  // That peak plus kPeakMargin, for a later job of the command that states
  // no memory; nullopt when none was learned.
  std::optional<int64_t> reservation(const JobKeys& job) const;

  // Samples per second a job trained alone, for its command and its model.
  void learn_alone_rate(const JobKeys& job, double samples_per_s);
  // The same command's, else the same model's.
  std::optional<double> alone_rate(const JobKeys& job) const;

 private:
  // The value for the command, else for the workload (when by_workload_).
  template <typename T>
  std::optional<T> find(const std::map<std::string, T>& learned, const JobKeys& job) const;

  bool by_workload_;
  std::map<std::string, double> shares_;       // by command and by workload
  std::map<std::string, int64_t> peaks_;       // by command
  std::map<std::string, double> alone_rates_;  // by command and by workload
};

}  // namespace colo::sched
