#include "colo/sched/simulator.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "colo/sched/gpu_ledger.h"
#include "colo/sched/job_history.h"
#include "colo/sched/job_request.h"
#include "colo/sched/queue_order.h"
#include "colo/sched/throughput_watch.h"

namespace colo::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr double kEpsilon = 1e-9;

// A running job, in the flat list every event walks (kept small and
// contiguous: a cluster runs tens of thousands at once).
struct Active {
  int64_t id = 0;
  int single_gpu = -1;       // its GPU, or -1 for a multi-GPU job (gpus_of_)
  double remaining_s = 0;    // solo-speed seconds of work left
  double oom_at_s = kInf;    // when it dies of OOM, if it does
  double done_below_s = 0;   // finished once remaining_s is at most this
};

class Simulation {
 public:
  Simulation(const std::vector<TraceJob>& trace, const SimulationOptions& options)
      : trace_(trace), options_(options), policy_(make_policy(options.policy, options.thresholds)),
        ledger_(std::vector<int64_t>(static_cast<size_t>(std::max(options.gpus, 0)), options.gpu.mem_total_bytes),
                options.mode, options.thresholds),
        watch_(options.thresholds.min_throughput_gain, options.thresholds.settle_s) {
    if (options.gpus < 1) throw std::invalid_argument("at least one GPU is needed");
    for (int g = 0; g < options.gpus; ++g) gpus_.push_back(std::make_unique<gpu::SimulatedDevice>(g, options.gpu));
    on_gpu_.resize(static_cast<size_t>(options.gpus));
    active_pos_.assign(trace.size(), -1);
    gpus_of_.resize(trace.size());
    readings_.assign(static_cast<size_t>(options.gpus), Reading{0.0, 0});
    advanced_to_.assign(static_cast<size_t>(options.gpus), 0.0);
    view_stale_.assign(static_cast<size_t>(options.gpus), 1);
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
      observe();
      watch_throughput();
      schedule();
      double next = next_arrival < arrivals.size() ? trace_[arrivals[next_arrival]].submit_s : kInf;
      next = std::min({next, next_event(), ledger_.next_settle_s(), ledger_.next_provisional_s(), next_verdict_s()});
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
      const Reading& r = readings_[static_cast<size_t>(g)];
      ledger_.observe(g, now_, r.sm_activity, options_.gpu.mem_total_bytes - r.mem_used_bytes);
    }
    for (const auto& m : ledger_.settle(now_)) {
      remember(m);
      if (active_pos_[static_cast<size_t>(m.id)] >= 0) mark_stale(gpus_of_[static_cast<size_t>(m.id)]);
    }
    for (const auto& m : ledger_.measure_provisional(now_)) {
      const std::string& command = trace_[m.id].command;
      if (!command.empty()) history_.learn_peak(JobKeys{command, ""}, m.peak_bytes);
      if (active_pos_[static_cast<size_t>(m.id)] >= 0) mark_stale(gpus_of_[static_cast<size_t>(m.id)]);
    }
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

  void mark_stale(const std::vector<int>& gpus) {
    for (int g : gpus) view_stale_[static_cast<size_t>(g)] = 1;
  }

  // An idle GPU's energy is its idle power over the time it idled: it is
  // brought up to now only before its load changes and at the end.
  void catch_up(int g) {
    double dt = now_ - advanced_to_[static_cast<size_t>(g)];
    if (dt > 0) gpus_[g]->advance(dt);
    advanced_to_[static_cast<size_t>(g)] = now_;
  }

  void remember(const MeasuredShare& m) {
    const std::string& command = trace_[m.id].command;
    if (!command.empty()) history_.learn_share(JobKeys{command, ""}, m.share);
  }

  // The throughput rule, as the runner applies it: a job joining others
  // whose figures are known is watched; once its own is known, its GPU
  // closes when the sum did not grow enough with it.
  std::optional<double> normalized_throughput(int64_t id) const {
    if (!alone_known(id)) return std::nullopt;
    if (now_ - result_.jobs[id].start_s < options_.thresholds.throughput_window_s - kEpsilon) return std::nullopt;
    double rate = 1.0;
    for (int g : gpus_of_[static_cast<size_t>(id)]) rate = std::min(rate, gpu_rate(g));
    return rate;
  }

  std::vector<JobThroughput> throughput_on(int g) const {
    std::vector<JobThroughput> jobs;
    for (int64_t id : on_gpu_[g]) jobs.push_back({id, normalized_throughput(id)});
    return jobs;
  }

  void watch_join(int64_t id, const std::vector<int>& gpus) {
    if (!options_.throughput_rule || !policy_->within_collocation_thresholds() ||
        !alone_known(id)) {
      return;
    }
    bool due = false;
    for (int g : gpus) {
      std::vector<JobThroughput> others = throughput_on(g);
      std::vector<int> watched = watch_.watched_gpus();
      bool another_join_here = std::find(watched.begin(), watched.end(), g) != watched.end();
      if (!watch_.joined(g, id, others, now_)) continue;
      // An event at the verdict only where it may close the GPU: a verdict
      // that passes changes nothing, and comes at any later event.
      due = due || another_join_here || may_stop_growing(g, id, others);
    }
    if (due) verdicts_due_.insert(now_ + options_.thresholds.throughput_window_s);
  }

  void watch_throughput() {
    while (!verdicts_due_.empty() && *verdicts_due_.begin() <= now_ + kEpsilon) verdicts_due_.erase(verdicts_due_.begin());
    if (watch_.watching() == 0) return;
    for (int g : watch_.watched_gpus()) {
      for (const auto& outcome : watch_.check(g, throughput_on(g), now_)) {
        if (!outcome.stopped_growing) continue;
        ledger_.close(g, *outcome.stopped_growing);
        view_stale_[static_cast<size_t>(g)] = 1;
        ++result_.gpus_closed;
      }
    }
  }

  // Whether, at today's rates, `id` joining `others` on `g` would leave
  // their summed throughput short of the rule's gain.
  bool may_stop_growing(int g, int64_t id, const std::vector<JobThroughput>& others) const {
    double before = 0;
    for (const auto& job : others) before += *job.normalized;
    double after = rate_with(g, id) * static_cast<double>(others.size() + 1);
    return after < before * (1 + options_.thresholds.min_throughput_gain) + kEpsilon;
  }

  bool alone_known(int64_t id) const { return alone_known_[static_cast<size_t>(workload_id_[static_cast<size_t>(id)])]; }

  double next_verdict_s() const { return verdicts_due_.empty() ? kInf : *verdicts_due_.begin(); }

  // Each job's speed on GPU `g` as a fraction of alone; with `joining` (a
  // job not yet there) counted in when it is not -1.
  double rate_with(int g, int64_t joining) const {
    double sum = joining >= 0 ? trace_[joining].sm_activity : 0;
    for (int64_t id : on_gpu_[g]) sum += trace_[id].sm_activity;
    size_t jobs = on_gpu_[g].size() + (joining >= 0 ? 1 : 0);
    double rate = 1.0 / std::max(1.0, sum);
    if (options_.mode == CollocationMode::kShared && jobs > 1) rate *= 1.0 - options_.shared_overhead;
    return rate;
  }

  double gpu_rate(int g) const { return rate_with(g, -1); }

  // The runner's rule (job_request.h). A job of unknown memory starts
  // provisionally only with options_.provisional_memory (the runner's rule
  // on real GPUs); the peak seen before an OOM death is its true one.
  JobRequest request_for(int64_t id) const {
    const TraceJob& t = trace_[id];
    const SimulatedJob& job = result_.jobs[id];
    RequestFacts facts;
    facts.id = id;
    facts.mem_bytes = t.mem_estimate_bytes;
    facts.sm_share = options_.declared_sm_share ? t.sm_activity : 0;
    facts.gpus = t.gpus;
    facts.keys = JobKeys{t.command, ""};
    facts.oom_deaths = job.state == JobState::kOutOfMemory ? job.oom_deaths : 0;
    facts.peak_bytes = t.mem_bytes;
    return build_request(facts, history_, options_.recovery,
                         options_.provisional_memory && options_.mode != CollocationMode::kExclusive);
  }

  // A one-GPU job anywhere; a multi-GPU job on the first node that has room for all of it.
  Placement pick_on_one_node(const JobRequest& request) {
    int per_node = options_.gpus_per_node;
    if (request.gpus <= 1 || per_node <= 0 || per_node >= options_.gpus) {
      return pick_gpus(*policy_, request, views_, /*explain=*/false);
    }
    for (size_t first = 0; first < views_.size(); first += static_cast<size_t>(per_node)) {
      size_t end = std::min(views_.size(), first + static_cast<size_t>(per_node));
      std::vector<GpuView> node(views_.begin() + static_cast<std::ptrdiff_t>(first),
                                views_.begin() + static_cast<std::ptrdiff_t>(end));
      Placement placement = pick_gpus(*policy_, request, node, /*explain=*/false);
      if (placement.placed()) return placement;
    }
    return {};
  }

  bool try_place(int64_t id, JobRequest request) {
    if (policy_->within_collocation_thresholds() && !might_fit(request, room_, options_.thresholds)) return false;
    Placement placement = pick_on_one_node(request);
    if (!placement.placed()) return false;
    if (request.provisional) {  // as Runner::start: what is free on its GPUs, less the margin
      int64_t reservation = std::numeric_limits<int64_t>::max();
      for (int g : placement.gpus) {
        reservation = std::min(reservation, provisional_reservation(views_[static_cast<size_t>(g)], options_.thresholds));
      }
      request.mem_bytes = reservation;
    }
    const TraceJob& t = trace_[id];
    Active r;
    r.id = id;
    r.single_gpu = placement.gpus.size() == 1 ? placement.gpus.front() : -1;
    r.remaining_s = t.duration_s;
    r.done_below_s = kEpsilon * std::max(1.0, t.duration_s);
    int64_t held_most = 0;
    watch_join(id, placement.gpus);  // before it counts on its GPUs: their jobs' figures without it
    for (int g : placement.gpus) {
      catch_up(g);
      int64_t physical_free = options_.gpu.mem_total_bytes - readings_[static_cast<size_t>(g)].mem_used_bytes;
      int64_t held = t.mem_bytes;
      if (t.mem_bytes > physical_free) {  // it will not fit: it dies once it reaches its peak
        held = std::max<int64_t>(physical_free, 0);
        r.oom_at_s = std::min(r.oom_at_s, now_ + std::min(options_.oom_after_s, t.duration_s));
      }
      gpus_[g]->place(id, {static_cast<uint32_t>(id), held, t.sm_activity});
      reread(g);
      on_gpu_[g].push_back(id);
      held_most = std::max(held_most, held);
    }
    ledger_.place(request, placement.gpus, now_);
    ledger_.observe_peak(id, held_most, now_);
    ledger_.started_training(id, now_);  // a simulated job trains from its first moment
    for (int g : placement.gpus) views_[static_cast<size_t>(g)] = ledger_.view(g, now_);
    mark_stale(placement.gpus);  // the next round's readings (free memory) include this job
    room_ = room_of(views_, options_.thresholds);
    gpus_of_[static_cast<size_t>(id)] = placement.gpus;
    active_pos_[static_cast<size_t>(id)] = static_cast<int>(active_.size());
    active_.push_back(r);
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

  // Whether `later` cannot fit wherever `failed` could not: it asks for at
  // least as much of everything, in the same class (known or unknown memory
  // and SM share, alone or not). Placements only take room away, so within
  // one round a refusal of `failed` stands for `later` too.
  static bool asks_at_least(const JobRequest& later, const JobRequest& failed) {
    if (later.must_run_alone != failed.must_run_alone || later.gpus < failed.gpus ||
        later.min_free_bytes < failed.min_free_bytes || later.mem_bytes.has_value() != failed.mem_bytes.has_value() ||
        (later.sm_share > 0) != (failed.sm_share > 0)) {
      return false;
    }
    return (!later.mem_bytes || *later.mem_bytes >= *failed.mem_bytes) && later.sm_share >= failed.sm_share;
  }

  // Views are computed once per round; a placement updates its GPUs' views.
  // A job that asks at least as much as one refused this round is refused
  // without a scan of every GPU (the same decision, found sooner).
  void schedule() {
    if (views_.size() != static_cast<size_t>(options_.gpus)) views_ = ledger_.views(now_);
    for (int g = 0; g < options_.gpus; ++g) {
      auto gi = static_cast<size_t>(g);
      // A view is kept only while the GPU was steady when it was computed and still is.
      bool steady = ledger_.steady(g);
      if (view_stale_[gi] || !steady) views_[gi] = ledger_.view(g, now_);
      view_stale_[gi] = steady ? 0 : 1;
    }
    room_ = room_of(views_, options_.thresholds);
    std::vector<JobRequest> refused;
    auto refused_already = [&refused](const JobRequest& r) {
      for (const auto& f : refused) {
        if (asks_at_least(r, f)) return true;
      }
      return false;
    };
    int considered = 0;
    for (auto it = queue_.begin(); it != queue_.end() && considered < options_.backfill_window; ++considered) {
      JobRequest request = request_for(it->id);
      bool placed = !refused_already(request) && try_place(it->id, request);
      if (!placed && refused.size() < 64 && !refused_already(request)) refused.push_back(request);
      if (placed) {
        it = queue_.erase(it);
      } else if (holds_back(it->id)) {
        return;
      } else {
        ++it;
      }
    }
  }

  // Each GPU's rate, computed once per event (a job's is its slowest GPU's).
  void compute_gpu_rates() {
    gpu_rates_.resize(static_cast<size_t>(options_.gpus));
    for (int g = 0; g < options_.gpus; ++g) gpu_rates_[static_cast<size_t>(g)] = on_gpu_[g].empty() ? 1.0 : gpu_rate(g);
  }

  double cached_job_rate(const Active& r) const {
    if (r.single_gpu >= 0) return gpu_rates_[static_cast<size_t>(r.single_gpu)];
    double rate = 1.0;
    for (int g : gpus_of_[static_cast<size_t>(r.id)]) rate = std::min(rate, gpu_rates_[static_cast<size_t>(g)]);
    return rate;
  }

  double next_event() {
    compute_gpu_rates();
    double next = kInf;
    for (const auto& r : active_) next = std::min({next, now_ + r.remaining_s / cached_job_rate(r), r.oom_at_s});
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
      for (int64_t id : on_gpu_[g]) share_sum += std::max(trace_[id].sm_activity, 1e-6);
      for (int64_t id : on_gpu_[g]) result_.jobs[id].energy_j += used * std::max(trace_[id].sm_activity, 1e-6) / share_sum;
    }
    for (auto& r : active_) r.remaining_s -= dt * cached_job_rate(r);
    now_ += dt;
  }

  void release(int64_t id) {
    const std::vector<int>& gpus = gpus_of_[static_cast<size_t>(id)];
    for (int g : gpus) {
      gpus_[g]->remove(id);
      reread(g);
      on_gpu_[g].erase(std::find(on_gpu_[g].begin(), on_gpu_[g].end(), id));
    }
    mark_stale(gpus);
    if (auto m = ledger_.remove(id, now_)) remember(*m);
    // Out of the flat list: the last entry takes its place.
    auto pos = static_cast<size_t>(active_pos_[static_cast<size_t>(id)]);
    active_[pos] = active_.back();
    active_pos_[static_cast<size_t>(active_[pos].id)] = static_cast<int>(pos);
    active_.pop_back();
    active_pos_[static_cast<size_t>(id)] = -1;
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
        if (!trace_[id].command.empty()) history_.learn_peak(JobKeys{trace_[id].command, ""}, trace_[id].mem_bytes);
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
  std::unique_ptr<Policy> policy_;
  GpuLedger ledger_;
  std::vector<std::unique_ptr<gpu::SimulatedDevice>> gpus_;
  std::vector<Active> active_;                // running jobs, in no order
  std::vector<int> active_pos_;               // by job id: its index in active_, -1 when not running
  std::vector<std::vector<int>> gpus_of_;     // by job id: the GPUs of its current attempt
  std::vector<std::vector<int64_t>> on_gpu_;  // running jobs by GPU
  JobHistory history_;  // measured SM shares, by command (a trace names no model)
  ThroughputWatch watch_;
  std::vector<int> workload_id_;      // by job: its workload (workload_of), numbered
  std::vector<char> alone_known_;     // by workload: a job of it completed, so its throughput alone is known
  std::multiset<double> verdicts_due_;  // when watched joins' figures become known
  std::set<QueueKey> queue_;
  std::vector<GpuView> views_;  // kept current through placements and across rounds (steady GPUs)
  GpuRoom room_;                // of views_, for might_fit
  std::vector<Reading> readings_;     // each GPU's, as of its last change
  std::vector<double> advanced_to_;   // virtual time each GPU's energy is counted to
  std::vector<char> view_stale_;      // views_[g] must be recomputed next round (changed, or not steady when computed)
  std::vector<double> gpu_rates_;  // this event's, from next_event()
  SimulationResult result_;
  double now_ = 0;
};

}  // namespace

SimulationResult simulate(const std::vector<TraceJob>& trace, const SimulationOptions& options) {
  return Simulation(trace, options).run();
}

}  // namespace colo::sched
