#include "colo/sched/simulator.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "colo/sched/queue_order.h"
#include "colo/sched/scheduler.h"

namespace colo::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr double kEpsilon = 1e-9;

// A running job, in the flat list every event walks (kept small and
// contiguous: a cluster runs tens of thousands at once).
struct Active {
  int64_t id = 0;
  int single_gpu = -1;       // its GPU, or -1 for a multi-GPU job (gpus_of_)
  double startup_left_s = 0; // seconds of start-up left (before it trains)
  double remaining_s = 0;    // solo-speed seconds of training left
  double oom_at_s = kInf;    // when it dies of OOM, if it does
  double done_below_s = 0;   // finished once remaining_s is at most this
};

class Simulation : private Executor {
 public:
  Simulation(const std::vector<TraceJob>& trace, const SimulationOptions& options)
      : trace_(trace), options_(options),
        scheduler_(std::vector<int64_t>(static_cast<size_t>(std::max(options.gpus, 0)), options.gpu.mem_total_bytes),
                   scheduler_options(options)) {
    if (options.gpus < 1) throw std::invalid_argument("at least one GPU is needed");
    for (int g = 0; g < options.gpus; ++g) gpus_.push_back(std::make_unique<gpu::SimulatedDevice>(g, options.gpu));
    on_gpu_.resize(static_cast<size_t>(options.gpus));
    active_pos_.assign(trace.size(), -1);
    training_.assign(trace.size(), 0);
    paused_.assign(trace.size(), 0);
    held_bytes_.assign(trace.size(), 0);
    gpus_of_.resize(trace.size());
    readings_.assign(static_cast<size_t>(options.gpus), Reading{0.0, 0});
    advanced_to_.assign(static_cast<size_t>(options.gpus), 0.0);
    std::map<std::string, int> workloads;
    for (const auto& t : trace) {
      workload_id_.push_back(workloads.emplace(workload_of(t), static_cast<int>(workloads.size())).first->second);
    }
    alone_known_.assign(workloads.size(), 0);
    result_.policy = options.policy;
    result_.mode = to_string(options.mode);
    for (size_t i = 0; i < trace.size(); ++i) {
      if (trace[i].gpus > options.gpus) {
        throw std::invalid_argument("job " + trace[i].name + " asks for " + std::to_string(trace[i].gpus) +
                                    " GPUs; the simulation has " + std::to_string(options.gpus));
      }
      if (options.gpus_per_node > 0 && trace[i].gpus > options.gpus_per_node) {
        throw std::invalid_argument("job " + trace[i].name + " asks for " + std::to_string(trace[i].gpus) +
                                    " GPUs; a node has " + std::to_string(options.gpus_per_node));
      }
      SimulatedJob job;
      job.id = static_cast<int64_t>(i);
      job.name = trace[i].name;
      job.submit_s = trace[i].submit_s;
      job.gpus = trace[i].gpus;
      result_.jobs.push_back(job);
    }
  }

  SimulationResult run() {
    std::vector<int64_t> arrivals(trace_.size());
    for (size_t i = 0; i < arrivals.size(); ++i) arrivals[i] = static_cast<int64_t>(i);
    std::stable_sort(arrivals.begin(), arrivals.end(),
                     [this](int64_t a, int64_t b) { return trace_[a].submit_s < trace_[b].submit_s; });
    size_t next_arrival = 0;
    while (next_arrival < arrivals.size() || !queue_.empty() || !active_.empty()) {
      while (next_arrival < arrivals.size() && trace_[arrivals[next_arrival]].submit_s <= now_) {
        enqueue(arrivals[next_arrival++], false);
      }
      Measured measured = scheduler_.observe(*this, now_);
      result_.gpus_closed += static_cast<int>(measured.closed.size());
      result_.judged_joins += static_cast<int>(measured.judged.size());
      for (const JudgedJoin& j : measured.judged) result_.judged_closings += j.closed ? 1 : 0;
      for (const MeasuredShare& m : measured.shares) {
        if (m.seen) result_.jobs[m.id].settled_share = m.share;
      }
      schedule();
      double next = next_arrival < arrivals.size() ? trace_[arrivals[next_arrival]].submit_s : kInf;
      next = std::min({next, next_event(), scheduler_.next_due_s()});
      if (next == kInf) break;  // nothing runs and nothing can be placed: jobs are lost
      advance(next - now_);
      finish_due();
    }
    return summarise();
  }

 private:
  // The runner's rules, with the simulation's knobs; reasons are not put
  // into words (nothing reads them).
  static SchedulerOptions scheduler_options(const SimulationOptions& options) {
    SchedulerOptions s;
    s.policy = options.policy;
    s.mode = options.mode;
    s.thresholds = options.thresholds;
    s.recovery = options.recovery;
    s.backfill = options.backfill;
    s.provisional_memory = options.provisional_memory;
    s.throughput_rule = options.throughput_rule;
    s.explain = false;
    s.window = options.backfill_window;
    s.gpus_per_node = options.gpus_per_node;
    return s;
  }

  void enqueue(int64_t id, bool recovery) {
    queue_.insert({recovery, trace_[id].priority, trace_[id].submit_s, id});
  }

  // What the runner reads from NVML and the jobs' progress files, here from
  // the simulated devices and the modelled rates (fractions of alone).
  Observation observe(double /*now_s*/) override {
    Observation seen;
    seen.gpus.reserve(static_cast<size_t>(options_.gpus));
    for (int g = 0; g < options_.gpus; ++g) {
      const Reading& r = readings_[static_cast<size_t>(g)];
      seen.gpus.push_back({g, r.sm_activity, options_.gpu.mem_total_bytes - r.mem_used_bytes});
    }
    compute_gpu_rates();
    seen.jobs.reserve(active_.size());
    for (const auto& r : active_) {
      // Work in seconds of solo speed done, on the simulated clock: its rate
      // between two readings is its mean fraction of alone. A job still
      // starting reports nothing yet, as a real one writes no progress.
      if (!training_[static_cast<size_t>(r.id)]) {
        seen.jobs.push_back({r.id, std::nullopt, false, std::nullopt, std::nullopt});
        continue;
      }
      WorkDone work{training_s(trace_[r.id]) - r.remaining_s, now_};
      // One that started up shows its memory once it trains (its launch
      // showed none); one that trained from launch showed it then.
      std::optional<int64_t> used;
      if (trace_[r.id].startup_s > 0) used = held_bytes_[static_cast<size_t>(r.id)];
      seen.jobs.push_back({r.id, used, true, cached_job_rate(r), work});
    }
    return seen;
  }

  // A simulated GPU's readings change only when a job comes or goes: read
  // them then, not at every event.
  struct Reading {
    double sm_activity;
    int64_t mem_used_bytes;
  };
  void reread(int g) {
    readings_[static_cast<size_t>(g)] = {gpus_[g]->sm_activity(), gpus_[g]->mem_used_bytes()};
  }

  // An idle GPU's energy is its idle power over the time it idled: it is
  // brought up to now only before its load changes and at the end.
  void catch_up(int g) {
    double dt = now_ - advanced_to_[static_cast<size_t>(g)];
    if (dt > 0) gpus_[g]->advance(dt);
    advanced_to_[static_cast<size_t>(g)] = now_;
  }

  // A job's throughput as a fraction of alone is its modelled rate, known
  // once a job of its workload completed and it has run the rule's window.
  std::optional<double> normalized_throughput(int64_t id) const override {
    if (!alone_known(id)) return std::nullopt;
    if (now_ - result_.jobs[id].start_s < options_.thresholds.throughput_window_s - kEpsilon) return std::nullopt;
    double rate = 1.0;
    for (int g : gpus_of_[static_cast<size_t>(id)]) rate = std::min(rate, gpu_rate(g));
    return rate;
  }

  bool alone_known(int64_t id) const { return alone_known_[static_cast<size_t>(workload_id_[static_cast<size_t>(id)])]; }

  // Each job's speed on GPU `g` as a fraction of alone.
  double gpu_rate(int g) const {
    double sum = 0;
    for (int64_t id : on_gpu_[g]) sum += activity_now(id);
    double rate = 1.0 / std::max(1.0, sum);
    if (options_.mode == CollocationMode::kShared && on_gpu_[g].size() > 1) rate *= 1.0 - options_.shared_overhead;
    return rate;
  }

  // What the scheduler knows of a waiting job: what the trace declares (its
  // SM share only with declared_sm_share); the peak seen before an OOM
  // death is its true one.
  RequestFacts facts_of(int64_t id) const {
    const TraceJob& t = trace_[id];
    const SimulatedJob& job = result_.jobs[id];
    RequestFacts facts;
    facts.id = id;
    facts.mem_bytes = t.mem_estimate_bytes;
    facts.sm_share = options_.declared_sm_share ? t.sm_activity : 0;
    facts.gpus = t.gpus;
    facts.keys = JobKeys{t.command, t.workload};
    facts.oom_deaths = job.state == JobState::kOutOfMemory ? job.oom_deaths : 0;
    facts.peak_bytes = t.mem_bytes;
    return facts;
  }

  // Starts a placed job on the simulated GPUs: it starts up for its
  // startup_s (no SM activity, no progress) and then trains, holding its true
  // memory from the first moment where it fits and dying of OOM oom_after_s
  // later where it does not.
  Launch launch(int64_t id, const std::vector<int>& gpus, const JobRequest& /*request*/) override {
    const TraceJob& t = trace_[id];
    Active r;
    r.id = id;
    r.single_gpu = gpus.size() == 1 ? gpus.front() : -1;
    r.startup_left_s = t.startup_s;
    r.remaining_s = training_s(t);
    r.done_below_s = kEpsilon * std::max(1.0, t.duration_s);
    training_[static_cast<size_t>(id)] = t.startup_s > 0 ? 0 : 1;
    if (t.startup_s > 0) ++starting_;
    int64_t held_most = 0;
    for (int g : gpus) {
      catch_up(g);
      int64_t physical_free = options_.gpu.mem_total_bytes - readings_[static_cast<size_t>(g)].mem_used_bytes;
      int64_t held = t.mem_bytes;
      if (t.mem_bytes > physical_free) {  // it will not fit: it dies once it reaches its peak
        held = std::max<int64_t>(physical_free, 0);
        r.oom_at_s = std::min(r.oom_at_s, now_ + std::min(options_.oom_after_s, t.duration_s));
      }
      gpus_[g]->place(id, {static_cast<uint32_t>(id), held, activity_now(id)});
      reread(g);
      on_gpu_[g].push_back(id);
      held_most = std::max(held_most, held);
    }
    gpus_of_[static_cast<size_t>(id)] = gpus;
    held_bytes_[static_cast<size_t>(id)] = held_most;
    active_pos_[static_cast<size_t>(id)] = static_cast<int>(active_.size());
    active_.push_back(r);
    SimulatedJob& job = result_.jobs[id];
    job.state = JobState::kRunning;
    job.gpu = gpus.front();
    job.start_s = now_;
    ++job.attempts;
    // A job still starting shows the scheduler no memory yet, as a real one
    // before it moves its model to the GPU; its training shows it is active.
    if (t.startup_s > 0) return Launch::started(0, /*training=*/false);
    return Launch::started(held_most, /*training=*/true);
  }

  // A stopped job goes back to the queue, as the runner requeues it.
  void stop(int64_t id) override {
    if (active_pos_[static_cast<size_t>(id)] < 0) return;
    release(id);
    result_.jobs[id].state = JobState::kRequeued;
    enqueue(id, false);
  }

  // A paused job neither starts up nor trains, and its GPUs' activity
  // drops its share until it is resumed.
  void pause(const std::vector<int64_t>& ids) override { set_paused(ids, 1); }
  void resume(const std::vector<int64_t>& ids) override { set_paused(ids, 0); }
  void set_paused(const std::vector<int64_t>& ids, char paused) {
    for (int64_t id : ids) {
      if (active_pos_[static_cast<size_t>(id)] < 0 || paused_[static_cast<size_t>(id)] == paused) continue;
      for (int g : gpus_of_[static_cast<size_t>(id)]) catch_up(g);
      paused_[static_cast<size_t>(id)] = paused;
      for (int g : gpus_of_[static_cast<size_t>(id)]) {
        gpus_[g]->set_activity(id, activity_now(id));
        reread(g);
      }
    }
  }

  // The first `backfill_window` waiting jobs in rank order, tried by the
  // scheduler's round; those it started leave the queue.
  void schedule() {
    waiting_.clear();
    for (const QueueKey& key : queue_) {
      if (static_cast<int>(waiting_.size()) >= options_.backfill_window) break;
      WaitingJob w;
      w.facts = facts_of(key.id);
      w.rank = key;
      w.waited_s = now_ - trace_[key.id].submit_s;
      w.throughput_comparable = alone_known(key.id);
      waiting_.push_back(std::move(w));
    }
    RoundOutcome outcome = scheduler_.round(waiting_, *this, now_);
    if (outcome.started.empty()) return;
    std::sort(outcome.started.begin(), outcome.started.end());
    for (const WaitingJob& w : waiting_) {
      if (std::binary_search(outcome.started.begin(), outcome.started.end(), w.facts.id)) queue_.erase(w.rank);
    }
  }

  // Each GPU's rate, computed once per event (a job's is its slowest GPU's).
  void compute_gpu_rates() {
    gpu_rates_.resize(static_cast<size_t>(options_.gpus));
    for (int g = 0; g < options_.gpus; ++g) gpu_rates_[static_cast<size_t>(g)] = on_gpu_[g].empty() ? 1.0 : gpu_rate(g);
  }

  double cached_job_rate(const Active& r) const {
    if (paused_[static_cast<size_t>(r.id)]) return 0;
    if (r.single_gpu >= 0) return gpu_rates_[static_cast<size_t>(r.single_gpu)];
    double rate = 1.0;
    for (int g : gpus_of_[static_cast<size_t>(r.id)]) rate = std::min(rate, gpu_rates_[static_cast<size_t>(g)]);
    return rate;
  }

  double next_event() {
    compute_gpu_rates();
    double next = kInf;
    for (const auto& r : active_) {
      if (paused_[static_cast<size_t>(r.id)]) continue;
      double done = r.startup_left_s > 0 ? now_ + r.startup_left_s : now_ + r.remaining_s / cached_job_rate(r);
      next = std::min({next, done, r.oom_at_s});
    }
    return next;
  }

  // Rates are those next_event() computed: nothing was placed or removed since.
  void advance(double dt) {
    if (dt <= 0) return;
    for (int g = 0; g < options_.gpus; ++g) {
      if (on_gpu_[g].empty()) continue;  // idle: catch_up() accounts for it later
      double used = gpus_[g]->advance(dt);
      advanced_to_[static_cast<size_t>(g)] = now_ + dt;
      double share_sum = 0;
      for (int64_t id : on_gpu_[g]) share_sum += std::max(activity_now(id), 1e-6);
      for (int64_t id : on_gpu_[g]) result_.jobs[id].energy_j += used * std::max(activity_now(id), 1e-6) / share_sum;
    }
    for (auto& r : active_) {
      if (paused_[static_cast<size_t>(r.id)]) continue;
      if (r.startup_left_s > 0) {
        r.startup_left_s -= dt;  // events end start-ups exactly: dt never crosses one
      } else {
        r.remaining_s -= dt * cached_job_rate(r);
      }
    }
    now_ += dt;
    begin_training_due();
  }

  // Jobs whose start-up ended by now begin to train: their SM activity
  // joins their GPUs'.
  void begin_training_due() {
    if (starting_ == 0) return;  // most simulations have no start-ups: no walk
    for (auto& r : active_) {
      if (training_[static_cast<size_t>(r.id)] || r.startup_left_s > kEpsilon * std::max(1.0, trace_[r.id].duration_s)) {
        continue;
      }
      r.startup_left_s = 0;
      training_[static_cast<size_t>(r.id)] = 1;
      --starting_;
      for (int g : gpus_of_[static_cast<size_t>(r.id)]) {
        catch_up(g);
        gpus_[g]->set_activity(r.id, activity_now(r.id));
        reread(g);
      }
    }
  }

  // Seconds of training alone (its run alone less its start-up).
  static double training_s(const TraceJob& t) { return t.duration_s - t.startup_s; }

  // Its SM activity now: none while it starts up or is paused.
  double activity_now(int64_t id) const {
    return training_[static_cast<size_t>(id)] && !paused_[static_cast<size_t>(id)] ? trace_[id].sm_activity : 0.0;
  }

  void release(int64_t id) {
    const std::vector<int>& gpus = gpus_of_[static_cast<size_t>(id)];
    for (int g : gpus) {
      gpus_[g]->remove(id);
      reread(g);
      on_gpu_[g].erase(std::find(on_gpu_[g].begin(), on_gpu_[g].end(), id));
    }
    // Out of the flat list: the last entry takes its place.
    auto pos = static_cast<size_t>(active_pos_[static_cast<size_t>(id)]);
    active_[pos] = active_.back();
    active_pos_[static_cast<size_t>(active_[pos].id)] = static_cast<int>(pos);
    active_.pop_back();
    active_pos_[static_cast<size_t>(id)] = -1;
    if (!training_[static_cast<size_t>(id)]) --starting_;  // it left while starting up
    training_[static_cast<size_t>(id)] = 0;
    paused_[static_cast<size_t>(id)] = 0;
  }

  // Jobs that ended by now, handled in id order (as the runner's job table
  // is): an OOM death first, else a completion.
  void finish_due() {
    std::vector<int64_t> due;
    for (const auto& r : active_) {
      if (r.oom_at_s <= now_ + kEpsilon || r.remaining_s <= r.done_below_s) due.push_back(r.id);
    }
    std::sort(due.begin(), due.end());
    for (int64_t id : due) {
      bool oom = active_[static_cast<size_t>(active_pos_[static_cast<size_t>(id)])].oom_at_s <= now_ + kEpsilon;
      SimulatedJob& job = result_.jobs[id];
      release(id);
      if (auto m = scheduler_.ended(id, now_); m && m->seen) job.settled_share = m->share;
      if (oom) {
        ++result_.oom_events;
        ++job.oom_deaths;
        job.state = state_after_oom_death(job.oom_deaths, options_.recovery);
        if (job.state == JobState::kFailed) {
          job.end_s = now_;
          ++result_.oom_unrecovered;
        } else {
          enqueue(id, true);
        }
      } else {
        job.state = JobState::kCompleted;
        job.end_s = now_;
        alone_known_[static_cast<size_t>(workload_id_[static_cast<size_t>(id)])] = 1;
        // As the runner learns a completed job's measured peak.
        scheduler_.history().learn_peak(JobKeys{trace_[id].command, trace_[id].workload}, trace_[id].mem_bytes);
      }
    }
  }

  SimulationResult summarise() {
    result_.total_s = now_;
    int finished = 0;
    for (int g = 0; g < options_.gpus; ++g) {
      catch_up(g);
      result_.energy_j += gpus_[g]->energy_j();
    }
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
  Scheduler scheduler_;
  std::vector<std::unique_ptr<gpu::SimulatedDevice>> gpus_;
  std::vector<Active> active_;                // running jobs, in no order
  std::vector<int> active_pos_;               // by job id: its index in active_, -1 when not running
  std::vector<char> training_;                // by job id: running and past its start-up
  std::vector<char> paused_;                  // by job id: paused by a probe (Executor::pause)
  std::vector<int64_t> held_bytes_;           // by job id: memory it holds on its GPUs (the most on one)
  int64_t starting_ = 0;                      // running jobs still starting up
  std::vector<std::vector<int>> gpus_of_;     // by job id: the GPUs of its current attempt
  std::vector<std::vector<int64_t>> on_gpu_;  // running jobs by GPU
  std::vector<int> workload_id_;      // by job: its workload (workload_of), numbered
  std::vector<char> alone_known_;     // by workload: a job of it completed, so its throughput alone is known
  std::set<QueueKey> queue_;
  std::vector<WaitingJob> waiting_;   // this round's, kept to reuse its storage
  std::vector<Reading> readings_;     // each GPU's, as of its last change
  std::vector<double> advanced_to_;   // virtual time each GPU's energy is counted to
  std::vector<double> gpu_rates_;  // this event's, from next_event()
  SimulationResult result_;
  double now_ = 0;
};

}  // namespace

SimulationResult simulate(const std::vector<TraceJob>& trace, const SimulationOptions& options) {
  return Simulation(trace, options).run();
}

}  // namespace colo::sched
