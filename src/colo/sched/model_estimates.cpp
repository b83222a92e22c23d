#include "colo/sched/model_estimates.h"

#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "colo/core/colo_command.h"
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/core/table.h"

namespace colo::sched {

std::string model_table_key(const JobSpec& job) {
  if (!job.model) return "";
  const estimate::PythonModelSource& m = *job.model;
  nlohmann::json key = {m.builder, m.input, m.vocab, m.batch_size, m.optimizer, m.eval_batch_size, job.workdir};
  // How it trains, where it differs from the defaults (keys made before these existed stay valid).
  estimate::PythonModelSource defaults;
  if (m.autocast != defaults.autocast) key.push_back({"autocast", m.autocast});
  if (m.keep_output != defaults.keep_output) key.push_back({"keep_output", m.keep_output});
  if (m.set_to_none != defaults.set_to_none) key.push_back({"set_to_none", m.set_to_none});
  if (m.accumulation_steps != defaults.accumulation_steps) key.push_back({"accumulation_steps", m.accumulation_steps});
  if (m.zero_grad != defaults.zero_grad) key.push_back({"zero_grad", m.zero_grad});
  return key.dump();
}

std::string estimate_key(const JobSpec& job) {
  if (job.model) return model_table_key(job);
  std::optional<ColoSpecCommand> colo = colo_spec_command(job.command, job.workdir);
  if (!colo) return "";
  std::string content;
  try {
    content = read_file(colo->path);
  } catch (const std::exception&) {
    return "";  // no file to estimate: the job is placed as one of unknown memory
  }
  return nlohmann::json{colo->subcommand, colo->path, colo->after, content}.dump();
}

// What the scheduler's thread and the estimating threads share.
struct ModelEstimates::Shared {
  std::mutex mutex;
  EstimateModel estimate;
  int parallel = 1;
  int running = 0;
  bool stopped = false;                            // the owner is gone: take nothing more
  std::deque<std::pair<std::string, JobSpec>> queue;
  std::set<std::string> asked;                     // queued or running
  std::map<std::string, double> asked_at_s;        // unix time it was asked for
  std::map<std::string, std::pair<ModelEstimate, double>> done;  // answer, seconds it took

  // One thread's work: estimates until the queue is empty.
  static void work(const std::shared_ptr<Shared>& self, std::string key, JobSpec job) {
    for (;;) {
      Stopwatch took;
      ModelEstimate answer;
      try {
        answer = self->estimate(job);
      } catch (const std::exception& e) {
        answer = ModelEstimate{std::nullopt, e.what()};
      }
      std::lock_guard lock(self->mutex);
      self->done[key] = {answer, took.elapsed_s()};
      if (self->stopped || self->queue.empty()) {
        --self->running;
        return;
      }
      std::tie(key, job) = std::move(self->queue.front());
      self->queue.pop_front();
    }
  }
};

ModelEstimates::ModelEstimates(JobStore& store, EstimateModel estimate, int parallel, std::string version)
    : store_(store), version_(std::move(version)), shared_(std::make_shared<Shared>()) {
  shared_->estimate = std::move(estimate);
  shared_->parallel = std::max(parallel, 1);
}

ModelEstimates::~ModelEstimates() {
  std::lock_guard lock(shared_->mutex);
  shared_->stopped = true;
}

int ModelEstimates::in_flight() const {
  std::lock_guard lock(shared_->mutex);
  return static_cast<int>(shared_->asked.size());
}

void ModelEstimates::start_queued() {
  while (shared_->running < shared_->parallel && !shared_->queue.empty()) {
    auto [key, job] = std::move(shared_->queue.front());
    shared_->queue.pop_front();
    ++shared_->running;
    std::thread(Shared::work, shared_, std::move(key), std::move(job)).detach();
  }
}

ModelEstimates::Answer ModelEstimates::lookup(const JobSpec& job) {
  std::string key = estimate_key(job);
  if (key.empty()) return {Status::kUnknown, 0, "it names no model and no readable colo spec"};
  if (!version_.empty()) key = version_ + " " + key;
  std::map<std::string, std::pair<ModelEstimate, double>> done;
  {
    std::lock_guard lock(shared_->mutex);
    done.swap(shared_->done);
    for (const auto& [k, answer] : done) shared_->asked.erase(k);
  }
  for (const auto& [k, answer] : done) {
    if (answer.first.transient) {
      transient_[k] = answer.first;
    } else {
      store_.record_model_estimate(k, answer.first, answer.second);
    }
  }
  if (auto it = transient_.find(key); it != transient_.end()) return {Status::kUnknown, 0, it->second.reason};
  if (auto stored = store_.model_estimate(key)) {
    if (stored->bytes) return {Status::kKnown, *stored->bytes, stored->reason};
    return {Status::kUnknown, 0, stored->reason};
  }
  std::lock_guard lock(shared_->mutex);
  if (shared_->asked.insert(key).second) {
    shared_->asked_at_s[key] = unix_time_s();
    shared_->queue.emplace_back(key, job);
    start_queued();
  }
  double waited = unix_time_s() - shared_->asked_at_s[key];
  return {Status::kPending, 0, "waiting for its memory estimate (" + fixed(waited, 0) + " s so far)"};
}

}  // namespace colo::sched
