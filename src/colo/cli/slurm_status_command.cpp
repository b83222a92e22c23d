// `colo slurm status`: Slurm's queue with colo's columns (memory asked for,
// peak, energy, OOM retries), from squeue and colo's records.

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "colo/cli/job_table.h"
#include "colo/cli/slurm_subcommands.h"
#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/table.h"
#include "colo/slurm/job_status.h"

namespace colo::cli {
namespace {

struct StatusArgs {
  std::string state = "colo-slurm";
  std::string json;
};

std::string size_or(const std::optional<int64_t>& bytes, const char* otherwise) {
  return bytes ? bytes_human(static_cast<double>(*bytes)) : otherwise;
}

int status(const StatusArgs& args) {
  if (!is_directory(args.state)) throw InputError(args.state, "--state", "a state directory of colo slurm submit");
  slurm::StateDir state(args.state);
  std::vector<slurm::QueueRow> queue;
  bool queue_known = true;
  try {
    queue = slurm::SlurmClient(15.0).queue();
  } catch (const slurm::SlurmError& e) {
    queue_known = false;
    spdlog::warn("colo slurm status: {} (showing colo's records alone)", e.what());
  }
  auto attempts = state.attempts();
  auto jobs = slurm::job_statuses(state.submitted(), attempts, queue);
  TablePrinter table({{"slurm id", 10}, {"name", 26}, {"state", 10}, {"gres", 9}, {"mem", 11}, {"peak", 10},
                      {"energy_J", 9}, {"oom", 3}, {"node", 8}, {"reason", 40}});
  table.header();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& j : jobs) {
    std::string state_text = j.state == "LOST" && !queue_known ? "UNKNOWN" : j.state;
    table.row({j.job_id, name_cell(j.name), state_text, j.gres, size_or(j.mem_bytes, "whole GPU"), size_or(j.peak_bytes, "-"),
               j.energy_known ? fixed(j.energy_j, 0) : "-", std::to_string(j.oom_retries), j.node, j.reason});
    out.push_back({{"first_id", j.first_id}, {"job_id", j.job_id}, {"name", j.name}, {"state", state_text},
                   {"gres", j.gres}, {"mem_bytes", j.mem_bytes ? nlohmann::json(*j.mem_bytes) : nlohmann::json()},
                   {"peak_bytes", j.peak_bytes ? nlohmann::json(*j.peak_bytes) : nlohmann::json()},
                   {"energy_j", j.energy_known ? nlohmann::json(j.energy_j) : nlohmann::json()},
                   {"oom_retries", j.oom_retries}, {"node", j.node}, {"reason", j.reason}});
  }
  slurm::StatusSummary s = slurm::summarize(jobs, attempts);
  std::printf("%d jobs: %d completed, %d failed, %d running, %d pending, %d lost; %d OOM death(s) requeued with more "
              "memory; at most %d jobs at once on one GPU\n",
              s.jobs, s.completed, s.failed, s.running, s.pending, s.lost, s.oom_requeued, s.max_jobs_per_gpu);
  if (!args.json.empty()) {
    nlohmann::json summary = {{"jobs_submitted", s.jobs}, {"jobs_completed", s.completed}, {"jobs_failed", s.failed},
                              {"jobs_running", s.running}, {"jobs_pending", s.pending}, {"lost", s.lost},
                              {"oom_requeued", s.oom_requeued}, {"max_jobs_per_gpu", s.max_jobs_per_gpu},
                              {"queue_read", queue_known}, {"jobs", out}};
    write_file_atomically(args.json, summary.dump(1) + "\n");
  }
  return 0;
}

}  // namespace

void add_slurm_status(CLI::App& slurm, int& exit_code) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* cmd = slurm.add_subcommand("status", "Slurm's queue with colo's columns: memory, peak, energy, OOM retries");
  cmd->add_option("--state", args->state, "colo's records (as given to colo slurm submit)")->capture_default_str();
  cmd->add_option("--json", args->json, "also write the rows and totals here");
  cmd->callback([args, &exit_code] { exit_code = status(*args); });
}

}  // namespace colo::cli
