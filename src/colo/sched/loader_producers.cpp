#include "colo/sched/loader_producers.h"

#include <spdlog/spdlog.h>

#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo::sched {

LoaderProducers::LoaderProducers(std::string colo_program, std::string log_dir)
    : colo_program_(std::move(colo_program)), log_dir_(std::move(log_dir)) {}

LoaderProducers::~LoaderProducers() {
  for (auto& [data_file, producer] : producers_) {
    if (producer.process) producer.process->terminate(10.0);
  }
}

void LoaderProducers::acquire(const std::string& named_file, int64_t job_id) {
  const std::string data_file = resolved_path(named_file);  // one producer for every spelling of the path
  Producer& producer = producers_[data_file];
  if (!producer.process || producer.process->poll()) {
    if (producer.process) spdlog::warn("shared loader for {} had exited; starting it again", data_file);
    std::string log = log_dir_ + "/loader-" + std::to_string(++started_) + ".log";
    producer.process = std::make_unique<ChildProcess>(
        std::vector<std::string>{colo_program_, "loader", "serve", data_file, "--report", "0", "--idle-exit",
                                 std::to_string(kDetachedIdleExitS)},
        EnvironmentOverrides{}, log);
    spdlog::info("shared loader for {} started (pid {}, log {})", data_file, producer.process->pid(), log);
  }
  producer.jobs.insert(job_id);
  job_data_[job_id] = data_file;
}

void LoaderProducers::release(int64_t job_id) {
  auto used = job_data_.find(job_id);
  if (used == job_data_.end()) return;
  auto producer = producers_.find(used->second);
  job_data_.erase(used);
  if (producer == producers_.end()) return;
  producer->second.jobs.erase(job_id);
  if (!producer->second.jobs.empty()) return;
  if (producer->second.process) producer->second.process->terminate(10.0);
  spdlog::info("shared loader for {} stopped: no job reads it", producer->first);
  producers_.erase(producer);
}

void LoaderProducers::detach() {
  producers_.clear();  // ChildProcess's destructor leaves the process running
  job_data_.clear();
}

std::vector<std::string> LoaderProducers::running() {
  std::vector<std::string> files;
  for (auto& [data_file, producer] : producers_) {
    if (producer.process && !producer.process->poll()) files.push_back(data_file);
  }
  return files;
}

std::string colo_program_beside_this_one() {
  std::string self = this_program_path();
  auto slash = self.rfind('/');
  return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/colo";
}

}  // namespace colo::sched
