#include "colo/sched/loader_producers.h"

#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

#include "colo/core/files.h"
#include "colo/core/loader_start_group.h"
#include "colo/core/paths.h"
#include "colo/data/loader_server.h"
#include "colo/data/shared_loader.h"

namespace colo::sched {
namespace {

// The last non-empty line of a log, without its line end; "" when none.
std::string last_line_of(const std::string& log) {
  std::string tail = file_tail(log, 4096);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
  auto start = tail.rfind('\n');
  return start == std::string::npos ? tail : tail.substr(start + 1);
}

// The counters of the producer answering at `data_file`'s address within
// `timeout_s` (LoaderServer::stats), and that address; nullopt when none
// answers, or the file cannot be read (a producer started for it then
// reports why).
std::optional<std::pair<std::string, nlohmann::json>> producer_at(const std::string& data_file, double timeout_s) {
  try {
    const std::string address = data::parse_loader_serve_spec(data_file).address;
    if (auto stats = data::query_loader_stats(address, timeout_s)) return std::make_pair(address, *stats);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The address of a producer that already serves `data_file` without this
// runner (one a user started, or a runner's before a restart left running);
// "" when none answers there.
std::string address_served_already(const std::string& data_file) {
  auto found = producer_at(data_file, 1.0);
  return found ? found->first : "";
}

// How many consumers read from the producer serving `data_file` now (its
// `consumers`, and one more while a scheduler holds it for jobs it is
// launching); 0 when it does not answer within half a second.
int64_t consumers_reading(const std::string& data_file) {
  auto found = producer_at(data_file, 0.5);
  if (!found) return 0;
  const nlohmann::json& stats = found->second;
  return stats.value("consumers", int64_t{0}) + (stats.value("held_s", 0.0) > 0 ? 1 : 0);
}

}  // namespace

void LoaderProducers::stop(const std::string& data_file, Producer& producer) {
  if (!producer.process || producer.process->poll()) return;
  if (int64_t others = consumers_reading(data_file); others > 0) {
    spdlog::info("shared loader for {}: {} consumer(s) not among this scheduler's jobs (or held for some being "
                 "launched) still read from it; left running (it exits once they have all gone for {:g} s)",
                 data_file, others, kDetachedIdleExitS);
    producer.process.reset();  // left running
    return;
  }
  producer.process->terminate(10.0);
  spdlog::info("shared loader for {} stopped: no job reads it", data_file);
}

LoaderProducers::LoaderProducers(std::string colo_program, std::string log_dir, double fill_wait_s,
                                 double hold_renew_s)
    : colo_program_(std::move(colo_program)),
      log_dir_(std::move(log_dir)),
      fill_wait_s_(fill_wait_s),
      hold_renew_s_(hold_renew_s) {}

LoaderProducers::~LoaderProducers() {
  for (auto& [data_file, producer] : producers_) stop(data_file, producer);
}

void LoaderProducers::acquire(const std::string& named_file, int64_t job_id, const EnvironmentOverrides& env) {
  const std::string data_file = resolved_path(named_file);  // one producer for every spelling of the path
  Producer& producer = producers_[data_file];
  const bool held = producer.jobs.count(job_id) > 0;  // it waits for this producer to fill its ring
  if (!held && producer.served_by.empty() && (!producer.process || producer.process->poll())) {
    producer.served_by = address_served_already(data_file);
    if (!producer.served_by.empty()) {
      producer.process.reset();
      producer.failure.clear();
      producer.ready = true;  // its ring is long full; its jobs join it as late consumers
      spdlog::info("shared loader for {}: a producer not started here already serves {}; its jobs read from it",
                   data_file, producer.served_by);
    }
  }
  // Until this job connects, the scheduler that started that one must not stop it.
  if (!held && !producer.served_by.empty()) {
    producer.since_hold.restart();
    if (!data::hold_loader(producer.served_by, kHoldForLaunchS, 1.0)) {
      spdlog::warn("shared loader at {} (for {}) did not answer; its jobs end if it has gone", producer.served_by,
                   data_file);
    }
  }
  // One that exited while jobs waited for its ring has failed: ready() tells
  // them why, and this job, which joins them; it is not started again under
  // them (a producer that fails at once would otherwise start once per job).
  const bool failed_while_jobs_waited = producer.process && !producer.ready && !producer.jobs.empty();
  if (!held && producer.served_by.empty() && !failed_while_jobs_waited &&
      (!producer.process || producer.process->poll())) {
    if (producer.process) spdlog::warn("shared loader for {} had exited; starting it again", data_file);
    const std::string name = log_dir_ + "/loader-" + std::to_string(++started_);
    producer.log = name + ".log";
    producer.ready_file = name + ".ready";
    remove_tree(producer.ready_file);  // an earlier runner's producer's must not count
    producer.process = std::make_unique<ChildProcess>(
        std::vector<std::string>{colo_program_, "loader", "serve", data_file, "--report", "0", "--idle-exit",
                                 std::to_string(kDetachedIdleExitS), "--ready-file", producer.ready_file},
        env, producer.log);
    producer.since_start.restart();
    producer.ready = false;
    producer.failure.clear();
    producer.start_group_open = false;
    producer.start_group.clear();
    remove_tree(start_group_size_file(producer.ready_file));
    spdlog::info("shared loader for {} started (pid {}, log {})", data_file, producer.process->pid(), producer.log);
  }
  producer.jobs.insert(job_id);
  job_data_[job_id] = data_file;
}

bool LoaderProducers::ready(const std::string& named_file) {
  auto found = producers_.find(resolved_path(named_file));
  if (found == producers_.end()) return false;
  Producer& producer = found->second;
  if (producer.ready) return true;
  if (!producer.process) return false;
  if (in_round_) return false;  // begin_round looked: it becomes ready next round
  const double waited_s = producer.since_start.elapsed_s();
  if (path_exists(producer.ready_file)) {
    spdlog::info("shared loader for {} filled its ring in {:.1f} s; starting its jobs", found->first, waited_s);
    producer.start_group_open = true;  // the jobs launched in this round start reading together
  } else if (producer.process->poll()) {
    producer.failure = last_line_of(producer.log);
    if (producer.failure.empty()) producer.failure = "no message (its log " + producer.log + " is empty)";
    spdlog::warn("shared loader for {} exited before filling its ring: {}", found->first, producer.failure);
  } else if (waited_s >= fill_wait_s_) {
    spdlog::warn("shared loader for {} has not filled its ring in {:g} s; starting its jobs anyway", found->first,
                 fill_wait_s_);
  } else {
    return false;
  }
  producer.ready = true;
  return true;
}

void LoaderProducers::begin_round() {
  in_round_ = false;
  for (auto& [data_file, producer] : producers_) {
    // While its jobs run, a producer not started here stays held: the
    // scheduler that started it must not stop it under them.
    if (!producer.served_by.empty() && !producer.jobs.empty() && producer.since_hold.elapsed_s() >= hold_renew_s_) {
      producer.since_hold.restart();
      data::hold_loader(producer.served_by, kHoldForLaunchS, 0.2);
    }
  }
  for (auto& [data_file, producer] : producers_) {
    if (!producer.jobs.empty()) ready(data_file);
  }
  in_round_ = true;
}

std::string LoaderProducers::start_group_of(const std::string& named_file) const {
  auto found = producers_.find(resolved_path(named_file));
  return found != producers_.end() && found->second.start_group_open ? found->second.ready_file : "";
}

void LoaderProducers::joined_start_group(const std::string& named_file, int64_t job_id) {
  auto found = producers_.find(resolved_path(named_file));
  if (found != producers_.end() && found->second.start_group_open) found->second.start_group.insert(job_id);
}

namespace {

// Writes how many jobs are in a producer's start group, and which
// (start_group_size_file).
void write_start_group_size(const std::string& data_file, const std::string& ready_file,
                            const std::set<int64_t>& jobs) {
  try {
    write_file_atomically(start_group_size_file(ready_file), start_group_size_text(jobs));
  } catch (const std::exception& e) {  // its jobs then start after the producer's wait
    spdlog::warn("shared loader for {}: cannot write its start group's size: {}", data_file, e.what());
  }
}

}  // namespace

void LoaderProducers::end_round() {
  in_round_ = false;
  for (auto& [data_file, producer] : producers_) {
    if (!producer.start_group_open) continue;
    producer.start_group_open = false;
    write_start_group_size(data_file, producer.ready_file, producer.start_group);
  }
}

std::string LoaderProducers::failure(const std::string& named_file) const {
  auto found = producers_.find(resolved_path(named_file));
  return found == producers_.end() ? std::string() : found->second.failure;
}

void LoaderProducers::release(int64_t job_id) {
  auto used = job_data_.find(job_id);
  if (used == job_data_.end()) return;
  auto producer = producers_.find(used->second);
  job_data_.erase(used);
  if (producer == producers_.end()) return;
  producer->second.jobs.erase(job_id);
  if (!producer->second.jobs.empty()) {
    // Once its size is written, a member that ends no longer counts (a
    // group the producer has served already ignores the change).
    if (producer->second.start_group.erase(job_id) > 0 && !producer->second.start_group_open) {
      write_start_group_size(producer->first, producer->second.ready_file, producer->second.start_group);
    }
    return;
  }
  stop(producer->first, producer->second);
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

std::vector<int> LoaderProducers::pids() const {
  std::vector<int> out;
  for (const auto& [file, producer] : producers_) {
    if (producer.process) out.push_back(producer.process->pid());
  }
  return out;
}

}  // namespace colo::sched
