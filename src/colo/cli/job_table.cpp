#include "colo/cli/job_table.h"

#include <string>

#include "colo/core/stopwatch.h"
#include "colo/core/table.h"

namespace colo::cli {
namespace {

std::string duration_cell(const sched::JobRecord& job) {
  if (!job.start_s) return "-";
  double end = job.end_s.value_or(unix_time_s());
  return fixed(end - *job.start_s, 1);
}

}  // namespace

sched::JobRecord record_from_json(const nlohmann::json& j) {
  sched::JobRecord r;
  r.id = j.at("id").get<int64_t>();
  r.spec = sched::job_spec_from_json(j.at("spec"));
  r.state = sched::job_state_from_string(j.at("state").get<std::string>()).value_or(sched::JobState::kPending);
  r.submit_s = j.value("submit_s", 0.0);
  r.gpu = j.value("gpu", -1);
  r.attempts = j.value("attempts", 0);
  r.reason = j.value("reason", "");
  if (j.contains("start_s")) r.start_s = j["start_s"].get<double>();
  if (j.contains("end_s")) r.end_s = j["end_s"].get<double>();
  if (j.contains("exit_code")) r.exit_code = j["exit_code"].get<int>();
  if (j.contains("peak_mem_bytes")) r.peak_mem_bytes = j["peak_mem_bytes"].get<int64_t>();
  if (j.contains("samples_per_s")) r.samples_per_s = j["samples_per_s"].get<double>();
  if (j.contains("alone_samples_per_s")) r.alone_samples_per_s = j["alone_samples_per_s"].get<double>();
  if (j.contains("data_wait_pct")) r.data_wait_pct = j["data_wait_pct"].get<double>();
  return r;
}

void print_jobs(const std::vector<sched::JobRecord>& jobs) {
  TablePrinter table({{"id", 5}, {"name", 28}, {"state", 13}, {"gpu", 3}, {"tries", 5}, {"run_s", 8},
                      {"peak_mem", 10}, {"samples/s", 9}, {"slowdown", 8}, {"data_wait", 9}, {"exit", 4},
                      {"reason", 30}});
  table.header();
  for (const auto& j : jobs) {
    table.row({std::to_string(j.id), j.spec.name.substr(0, 28), sched::to_string(j.state),
               j.gpu >= 0 ? std::to_string(j.gpu) : "-", std::to_string(j.attempts), duration_cell(j),
               j.peak_mem_bytes ? bytes_human(double(*j.peak_mem_bytes)) : "-",
               j.samples_per_s ? fixed(*j.samples_per_s, 0) : "-", j.slowdown() ? fixed(*j.slowdown(), 2) + "x" : "-",
               j.data_wait_pct ? fixed(*j.data_wait_pct, 1) + "%" : "-", j.exit_code ? std::to_string(*j.exit_code) : "-", j.reason});
  }
}

}  // namespace colo::cli
