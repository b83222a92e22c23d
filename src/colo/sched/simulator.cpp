#include "colo/sched/simulator.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "colo/sched/gpu_ledger.h"
#include "colo/sched/queue_order.h"

namespace colo::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Running {
  std::vector<int> gpus;
  double remaining_s = 0;    // solo-speed seconds of work left
  double oom_at_s = kInf;    // when it dies of OOM, if it does
};

class Simulation {
 public:
  Simulation(const std::vector<TraceJob>& trace, const SimulationOptions& options)
      : trace_(trace), options_(options), policy_(make_policy(options.policy, options.thresholds)),
        ledger_(std::vector<int64_t>(static_cast<size_t>(std::max(options.gpus, 0)), options.gpu.mem_total_bytes),
                options.mode, options.thresholds) {
    if (options.gpus < 1) throw std::invalid_argument("at least one GPU is needed");
    for (int g = 0; g < options.gpus; ++g) gpus_.push_back(std::make_unique<gpu::SimulatedDevice>(g, options.gpu));
    on_gpu_.resize(static_cast<size_t>(options.gpus));
    result_.policy = options.policy;
    result_.mode = to_string(options.mode);
    for (size_t i = 0; i < trace.size(); ++i) {
      if (trace[i].gpus > options.gpus) {
        throw std::invalid_argument("job " + trace[i].name + " asks for " + std::to_string(trace[i].gpus) +
                                    " GPUs; the simulation has " + std::to_string(options.gpus));
      }
      SimulatedJob job;
      job.id = static_cast<int64_t>(i);
      job.name = trace[i].name;
      job.submit_s = trace[i].submit_s;
      job.gpus = trace[i].gpus;
      result_.jobs.push_back(job);
      JobRequest request{job.id, trace[i].mem_estimate_bytes, options.declared_sm_share ? trace[i].sm_activity : 0,
                         false, 0, trace[i].gpus};
      requests_.push_back(request);
    }
  }

  SimulationResult run() {
    std::vector<int64_t> arrivals(trace_.size());
    for (size_t i = 0; i < arrivals.size(); ++i) arrivals[i] = static_cast<int64_t>(i);
    std::stable_sort(arrivals.begin(), arrivals.end(),
                     [this](int64_t a, int64_t b) { return trace_[a].submit_s < trace_[b].submit_s; });
    size_t next_arrival = 0;
    while (next_arrival < arrivals.size() || !queue_.empty() || !running_.empty()) {
      while (next_arrival < arrivals.size() && trace_[arrivals[next_arrival]].submit_s <= now_) {
        enqueue(arrivals[next_arrival++], false);
      }
      observe();
      schedule();
      double next = next_arrival < arrivals.size() ? trace_[arrivals[next_arrival]].submit_s : kInf;
      next = std::min({next, next_event(), ledger_.next_settle_s()});
      if (next == kInf) break;  // nothing runs and nothing can be placed: jobs are lost
      advance(next - now_);
      finish_due();
    }
    return summarise();
  }

 private:
  void enqueue(int64_t id, bool recovery) {
    queue_.insert({recovery, trace_[id].priority, trace_[id].submit_s, id});
  }

  // What the runner reads from NVML, here from the simulated devices; then
  // the shares of jobs whose settle window ended, remembered by command.
  void observe() {
    for (int g = 0; g < options_.gpus; ++g) {
      ledger_.observe(g, now_, gpus_[g]->sm_activity(), options_.gpu.mem_total_bytes - gpus_[g]->mem_used_bytes());
    }
    for (const auto& m : ledger_.settle(now_)) remember(m);
  }

  void remember(const MeasuredShare& m) {
    const std::string& command = trace_[m.id].command;
    if (!command.empty()) learned_share_[command] = m.share;
  }

  double gpu_rate(int g) const {
    double sum = 0;
    for (int64_t id : on_gpu_[g]) sum += trace_[id].sm_activity;
    double rate = 1.0 / std::max(1.0, sum);
    if (options_.mode == CollocationMode::kShared && on_gpu_[g].size() > 1) rate *= 1.0 - options_.shared_overhead;
    return rate;
  }

  double job_rate(const Running& r) const {
    double rate = 1.0;
    for (int g : r.gpus) rate = std::min(rate, gpu_rate(g));
    return rate;
  }

  JobRequest request_for(int64_t id) const {
    JobRequest request = requests_[id];
    if (request.sm_share <= 0) {
      auto learned = learned_share_.find(trace_[id].command);
      if (!trace_[id].command.empty() && learned != learned_share_.end()) request.sm_share = learned->second;
    }
    return request;
  }

  bool try_place(int64_t id) {
    JobRequest request = request_for(id);
    if (!might_fit(request, room_, options_.thresholds)) return false;
    Placement placement = pick_gpus(*policy_, request, views_, /*explain=*/false);
    if (!placement.placed()) return false;
    const TraceJob& t = trace_[id];
    Running r;
    r.gpus = placement.gpus;
    r.remaining_s = t.duration_s;
    int64_t held_most = 0;
    for (int g : placement.gpus) {
      int64_t physical_free = options_.gpu.mem_total_bytes - gpus_[g]->mem_used_bytes();
      int64_t held = t.mem_bytes;
      if (t.mem_bytes > physical_free) {  // it will not fit: it dies once it reaches its peak
        held = std::max<int64_t>(physical_free, 0);
        r.oom_at_s = std::min(r.oom_at_s, now_ + std::min(options_.oom_after_s, t.duration_s));
      }
      gpus_[g]->place(id, {static_cast<uint32_t>(id), held, t.sm_activity});
      on_gpu_[g].push_back(id);
      held_most = std::max(held_most, held);
    }
    ledger_.place(request, placement.gpus, now_);
    ledger_.observe_peak(id, held_most, now_);
    for (int g : placement.gpus) views_[static_cast<size_t>(g)] = ledger_.view(g, now_);
    room_ = room_of(views_, options_.thresholds);
    running_[id] = r;
    SimulatedJob& job = result_.jobs[id];
    job.state = JobState::kRunning;
    job.gpu = placement.gpus.front();
    job.start_s = now_;
    ++job.attempts;
    return true;
  }

  bool holds_back(int64_t id) const {
    return options_.backfill.holds_back_later_jobs(now_ - trace_[id].submit_s, trace_[id].gpus);
  }

  // Views are computed once per round; a placement updates its GPUs' views.
  void schedule() {
    views_ = ledger_.views(now_);
    room_ = room_of(views_, options_.thresholds);
    int considered = 0;
    for (auto it = queue_.begin(); it != queue_.end() && considered < options_.backfill_window; ++considered) {
      if (try_place(it->id)) {
        it = queue_.erase(it);
      } else if (holds_back(it->id)) {
        return;
      } else {
        ++it;
      }
    }
  }

  double next_event() const {
    double next = kInf;
    for (const auto& [id, r] : running_) next = std::min({next, now_ + r.remaining_s / job_rate(r), r.oom_at_s});
    return next;
  }

  void advance(double dt) {
    if (dt <= 0) return;
    std::map<int64_t, double> rates;
    for (const auto& [id, r] : running_) rates[id] = job_rate(r);
    for (int g = 0; g < options_.gpus; ++g) {
      double before = gpus_[g]->energy_j();
      gpus_[g]->advance(dt);
      double used = gpus_[g]->energy_j() - before;
      double share_sum = 0;
      for (int64_t id : on_gpu_[g]) share_sum += std::max(trace_[id].sm_activity, 1e-6);
      for (int64_t id : on_gpu_[g]) result_.jobs[id].energy_j += used * std::max(trace_[id].sm_activity, 1e-6) / share_sum;
    }
    for (auto& [id, r] : running_) r.remaining_s -= dt * rates[id];
    now_ += dt;
  }

  void release(int64_t id, const Running& r) {
    for (int g : r.gpus) {
      gpus_[g]->remove(id);
      on_gpu_[g].erase(std::find(on_gpu_[g].begin(), on_gpu_[g].end(), id));
    }
    if (auto m = ledger_.remove(id, now_)) remember(*m);
  }

  void finish_due() {
    constexpr double kEpsilon = 1e-9;
    for (auto it = running_.begin(); it != running_.end();) {
      int64_t id = it->first;
      SimulatedJob& job = result_.jobs[id];
      if (it->second.oom_at_s <= now_ + kEpsilon) {
        release(id, it->second);
        ++result_.oom_events;
        ++job.oom_deaths;
        job.state = state_after_oom_death(job.oom_deaths, options_.recovery);
        if (job.state == JobState::kFailed) {
          job.end_s = now_;
          ++result_.oom_unrecovered;
        } else {
          requests_[id] = recovery_request(requests_[id], options_.recovery, job.oom_deaths, trace_[id].mem_bytes);
          enqueue(id, true);
        }
        it = running_.erase(it);
      } else if (it->second.remaining_s <= kEpsilon * std::max(1.0, trace_[id].duration_s)) {
        release(id, it->second);
        job.state = JobState::kCompleted;
        job.end_s = now_;
        it = running_.erase(it);
      } else {
        ++it;
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
  GpuLedger ledger_;
  std::vector<std::unique_ptr<gpu::SimulatedDevice>> gpus_;
  std::map<int64_t, Running> running_;
  std::vector<std::vector<int64_t>> on_gpu_;  // running jobs by GPU
  std::vector<JobRequest> requests_;
  std::map<std::string, double> learned_share_;  // measured SM share by command
  std::set<QueueKey> queue_;
  std::vector<GpuView> views_;  // this round's, kept current through placements
  GpuRoom room_;                // of views_, for might_fit
  SimulationResult result_;
  double now_ = 0;
};

}  // namespace

SimulationResult simulate(const std::vector<TraceJob>& trace, const SimulationOptions& options) {
  return Simulation(trace, options).run();
}

}  // namespace colo::sched
