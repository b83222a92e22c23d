#include "colo/sched/simulator.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace colo::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Running {
  int64_t job = 0;
  double remaining_s = 0;    // solo-speed seconds of work left
  double oom_at_s = kInf;    // when it dies of OOM, if it does
  int64_t accounted_bytes = 0;  // what the scheduler counts against the GPU
};

class Simulation {
 public:
  Simulation(const std::vector<TraceJob>& trace, const SimulationOptions& options)
      : trace_(trace), options_(options), policy_(make_policy(options.policy, options.thresholds)),
        running_(options.gpus) {
    if (options.gpus < 1) throw std::invalid_argument("at least one GPU is needed");
    for (int g = 0; g < options.gpus; ++g) gpus_.push_back(std::make_unique<gpu::SimulatedDevice>(g, options.gpu));
    result_.policy = options.policy;
    result_.mode = to_string(options.mode);
    for (size_t i = 0; i < trace.size(); ++i) {
      SimulatedJob job;
      job.id = static_cast<int64_t>(i);
      job.name = trace[i].name;
      job.submit_s = trace[i].submit_s;
      result_.jobs.push_back(job);
      requests_.push_back(JobRequest{job.id, trace[i].mem_estimate_bytes, trace[i].sm_activity, false, 0});
    }
  }

  SimulationResult run() {
    size_t next_arrival = 0;
    while (next_arrival < trace_.size() || !queue_empty() || any_running()) {
      while (next_arrival < trace_.size() && trace_[next_arrival].submit_s <= now_) {
        enqueue(static_cast<int64_t>(next_arrival++), false);
      }
      schedule();
      double next = next_arrival < trace_.size() ? trace_[next_arrival].submit_s : kInf;
      next = std::min(next, next_event());
      if (next == kInf) break;  // nothing runs and nothing can be placed: jobs are lost
      advance(next - now_);
      finish_due();
    }
    return summarise();
  }

 private:
  bool queue_empty() const { return recovery_.empty() && normal_.empty(); }
  bool any_running() const {
    for (const auto& gpu : running_) {
      if (!gpu.empty()) return true;
    }
    return false;
  }

  void enqueue(int64_t id, bool recovery) {
    if (recovery) {
      recovery_.push_back(id);
    } else {
      normal_.insert({-trace_[id].priority, trace_[id].submit_s, id});
    }
  }

  double rate(int g) const {
    if (running_[g].empty()) return 1.0;
    double sum = 0;
    for (const auto& r : running_[g]) sum += trace_[r.job].sm_activity;
    double rate = 1.0 / std::max(1.0, sum);
    if (options_.mode == CollocationMode::kShared && running_[g].size() > 1) rate *= 1.0 - options_.shared_overhead;
    return rate;
  }

  GpuView view(int g) const {
    GpuView v;
    v.index = g;
    v.mem_total_bytes = options_.gpu.mem_total_bytes;
    int64_t accounted = 0;
    for (const auto& r : running_[g]) {
      accounted += r.accounted_bytes;
      if (requests_[r.job].must_run_alone) v.held_exclusively = true;
    }
    v.mem_free_bytes = v.mem_total_bytes - accounted;
    v.sm_activity = gpus_[g]->sm_activity();
    v.jobs = static_cast<int>(running_[g].size());
    if (options_.mode == CollocationMode::kExclusive && v.jobs > 0) v.held_exclusively = true;
    return v;
  }

  bool try_place(int64_t id) {
    std::vector<GpuView> views;
    for (int g = 0; g < options_.gpus; ++g) views.push_back(view(g));
    std::optional<int> g = pick_gpu(*policy_, requests_[id], views);
    if (!g) return false;
    const TraceJob& t = trace_[id];
    Running r;
    r.job = id;
    r.remaining_s = t.duration_s;
    int64_t physical_free = options_.gpu.mem_total_bytes - gpus_[*g]->mem_used_bytes();
    int64_t held = t.mem_bytes;
    if (t.mem_bytes > physical_free) {  // it will not fit: it dies once it reaches its peak
      held = std::max<int64_t>(physical_free, 0);
      r.oom_at_s = now_ + std::min(options_.oom_after_s, t.duration_s);
    }
    r.accounted_bytes = std::max(held, requests_[id].mem_bytes.value_or(held) + options_.thresholds.mem_margin_bytes);
    gpus_[*g]->place(id, {static_cast<uint32_t>(id), held, t.sm_activity});
    running_[*g].push_back(r);
    SimulatedJob& job = result_.jobs[id];
    job.state = JobState::kRunning;
    job.gpu = *g;
    job.start_s = now_;
    ++job.attempts;
    return true;
  }

  bool holds_back(int64_t id) const { return options_.backfill.holds_back_later_jobs(now_ - trace_[id].submit_s); }

  void schedule() {
    for (auto it = recovery_.begin(); it != recovery_.end();) {
      if (try_place(*it)) {
        it = recovery_.erase(it);
      } else if (holds_back(*it)) {
        return;
      } else {
        ++it;
      }
    }
    int considered = 0;
    for (auto it = normal_.begin(); it != normal_.end() && considered < options_.backfill_window; ++considered) {
      int64_t id = std::get<2>(*it);
      if (try_place(id)) {
        it = normal_.erase(it);
      } else if (holds_back(id)) {
        return;
      } else {
        ++it;
      }
    }
  }

  double next_event() const {
    double next = kInf;
    for (int g = 0; g < options_.gpus; ++g) {
      double speed = rate(g);
      for (const auto& r : running_[g]) next = std::min({next, now_ + r.remaining_s / speed, r.oom_at_s});
    }
    return next;
  }

  void advance(double dt) {
    if (dt <= 0) return;
    for (int g = 0; g < options_.gpus; ++g) {
      double speed = rate(g);
      double before = gpus_[g]->energy_j();
      gpus_[g]->advance(dt);
      double used = gpus_[g]->energy_j() - before;
      double share_sum = 0;
      for (const auto& r : running_[g]) share_sum += std::max(trace_[r.job].sm_activity, 1e-6);
      for (auto& r : running_[g]) {
        r.remaining_s -= dt * speed;
        result_.jobs[r.job].energy_j += used * std::max(trace_[r.job].sm_activity, 1e-6) / share_sum;
      }
    }
    now_ += dt;
  }

  void finish_due() {
    constexpr double kEpsilon = 1e-9;
    for (int g = 0; g < options_.gpus; ++g) {
      auto& list = running_[g];
      for (auto it = list.begin(); it != list.end();) {
        SimulatedJob& job = result_.jobs[it->job];
        if (it->oom_at_s <= now_ + kEpsilon) {
          gpus_[g]->remove(it->job);
          ++result_.oom_events;
          ++job.oom_deaths;
          if (job.oom_deaths > options_.recovery.max_retries) {
            job.state = JobState::kFailed;
            job.end_s = now_;
            ++result_.oom_unrecovered;
          } else {
            job.state = JobState::kOutOfMemory;
            requests_[it->job] = recovery_request(requests_[it->job], options_.recovery, job.oom_deaths,
                                                  trace_[it->job].mem_bytes);
            enqueue(it->job, true);
          }
          it = list.erase(it);
        } else if (it->remaining_s <= kEpsilon * std::max(1.0, trace_[it->job].duration_s)) {
          gpus_[g]->remove(it->job);
          job.state = JobState::kCompleted;
          job.end_s = now_;
          it = list.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  SimulationResult summarise() {
    result_.total_s = now_;
    int finished = 0;
    for (auto& gpu : gpus_) result_.energy_j += gpu->energy_j();
    for (const auto& job : result_.jobs) {
      if (!is_final(job.state)) {
        ++result_.jobs_lost;
        continue;
      }
      if (job.state != JobState::kCompleted) continue;
      ++finished;
      result_.mean_wait_s += job.start_s - job.submit_s;
      result_.mean_exec_s += job.end_s - job.start_s;
      result_.mean_jct_s += job.end_s - job.submit_s;
    }
    if (finished > 0) {
      result_.mean_wait_s /= finished;
      result_.mean_exec_s /= finished;
      result_.mean_jct_s /= finished;
    }
    return result_;
  }

  const std::vector<TraceJob>& trace_;
  SimulationOptions options_;
  std::unique_ptr<Policy> policy_;
  std::vector<std::unique_ptr<gpu::SimulatedDevice>> gpus_;
  std::vector<std::vector<Running>> running_;
  std::vector<JobRequest> requests_;
  std::deque<int64_t> recovery_;
  std::set<std::tuple<int, double, int64_t>> normal_;
  SimulationResult result_;
  double now_ = 0;
};

}  // namespace

CollocationMode collocation_mode_from_string(const std::string& name) {
  if (name == "exclusive") return CollocationMode::kExclusive;
  if (name == "shared") return CollocationMode::kShared;
  if (name == "mps") return CollocationMode::kMps;
  throw std::invalid_argument("unknown mode \"" + name + "\" (known: exclusive, shared, mps)");
}

std::string to_string(CollocationMode mode) {
  switch (mode) {
    case CollocationMode::kExclusive: return "exclusive";
    case CollocationMode::kShared: return "shared";
    case CollocationMode::kMps: return "mps";
  }
  return "?";
}

SimulationResult simulate(const std::vector<TraceJob>& trace, const SimulationOptions& options) {
  return Simulation(trace, options).run();
}

}  // namespace colo::sched
