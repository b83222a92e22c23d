#pragma once
// A `colo report` directory from a run of real jobs, in the form `colo
// simulate --out` writes: summary.json, jobs_<policy>_<mode>.jsonl and the
// GPU timeline.

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/gpu/device.h"
#include "colo/sched/store.h"

namespace colo::cli {

// A one-run summary.json and a record per job with times in seconds from
// `t0` (the run's start). A job that was retried shows its last attempt.
void write_report_directory(const std::string& dir, const nlohmann::json& summary, const std::string& policy,
                            const std::string& mode, const std::vector<sched::JobRecord>& jobs, double t0);

// Appends every device's latest reading to the timeline CSV `colo report` draws.
class TimelineWriter {
 public:
  // Throws InputError when `path` cannot be written.
  explicit TimelineWriter(const std::string& path);
  void append(const std::map<int, gpu::DeviceSample>& samples);

 private:
  std::ofstream out_;
};

}  // namespace colo::cli
