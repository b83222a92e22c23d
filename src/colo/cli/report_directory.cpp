#include "colo/cli/report_directory.h"

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/paths.h"
#include "colo/gpu/sampler.h"

namespace colo::cli {

void write_report_directory(const std::string& dir, const nlohmann::json& summary, const std::string& policy,
                            const std::string& mode, const std::vector<sched::JobRecord>& jobs, double t0) {
  auto since_start = [t0](const std::optional<double>& t) { return t ? *t - t0 : -1.0; };
  JsonLinesWriter out(dir + "/jobs_" + policy + "_" + mode + ".jsonl",
                      JsonLinesWriter::Mode::kTruncate);
  for (const auto& j : jobs) {
    nlohmann::json record{{"id", j.id}, {"name", j.spec.name}, {"state", sched::to_string(j.state)}, {"gpu", j.gpu},
                          {"gpus", j.gpus}, {"submit_s", j.submit_s - t0}, {"start_s", since_start(j.start_s)},
                          {"end_s", since_start(j.end_s)}, {"attempts", j.attempts}, {"oom_deaths", j.oom_deaths},
                          {"energy_j", j.energy_j}, {"peak_mem_bytes", j.peak_mem_bytes.value_or(0)}};
    if (j.samples_per_s) record["samples_per_s"] = *j.samples_per_s;
    if (j.alone_samples_per_s) record["alone_samples_per_s"] = *j.alone_samples_per_s;
    if (auto factor = j.slowdown()) record["slowdown"] = *factor;
    out.write(record);
  }
  write_file_atomically(dir + "/summary.json", nlohmann::json::array({summary}).dump(1) + "\n");
}

TimelineWriter::TimelineWriter(const std::string& path) : out_(path, std::ios::trunc) {
  if (!out_) throw InputError(path, "", "cannot write the GPU timeline");
  out_ << gpu::sample_csv_header() << "\n";
}

void TimelineWriter::append(const std::map<int, gpu::DeviceSample>& samples) {
  for (const auto& [position, sample] : samples) out_ << gpu::sample_csv_row(sample) << "\n";
  out_.flush();
}

}  // namespace colo::cli
