#include "colo/sched/scheduler.h"

#include <algorithm>
#include <limits>

namespace colo::sched {
namespace {

constexpr double kEpsilon = 1e-9;

// Whether `later` cannot fit wherever `failed` could not: it asks for at
// least as much of everything, in the same class (known or unknown memory
// and SM share, alone or not). Placements only take room away, so within
// one round a refusal of `failed` stands for `later` too.
bool asks_at_least(const JobRequest& later, const JobRequest& failed) {
  if (later.must_run_alone != failed.must_run_alone || later.gpus < failed.gpus ||
      later.min_free_bytes < failed.min_free_bytes || later.mem_bytes.has_value() != failed.mem_bytes.has_value() ||
      (later.sm_share > 0) != (failed.sm_share > 0)) {
    return false;
  }
  return (!later.mem_bytes || *later.mem_bytes >= *failed.mem_bytes) && later.sm_share >= failed.sm_share;
}

bool same_reading(const GpuReading& a, const GpuReading& b) {
  return a.sm_activity == b.sm_activity && a.mem_free_bytes == b.mem_free_bytes;
}

}  // namespace

Scheduler::Scheduler(std::vector<int64_t> mem_total_bytes, SchedulerOptions options)
    : options_(std::move(options)), policy_(make_policy(options_.policy, options_.thresholds)),
      ledger_(mem_total_bytes, options_.mode, options_.thresholds), history_(options_.predict_shares),
      watch_(options_.thresholds.min_throughput_gain, options_.thresholds.settle_s) {
  views_ = ledger_.views(0);
  view_stale_.assign(views_.size(), 1);
  last_readings_.resize(views_.size());
  for (size_t g = 0; g < last_readings_.size(); ++g) last_readings_[g].gpu = static_cast<int>(g);
}

JobRequest Scheduler::request_for(const RequestFacts& facts) const {
  return build_request(facts, history_, options_.recovery,
                       options_.provisional_memory && options_.mode != CollocationMode::kExclusive);
}

bool Scheduler::rule_applies() const { return options_.throughput_rule && policy_->within_collocation_thresholds(); }

void Scheduler::mark_stale(const std::vector<int>& gpus) {
  for (int g : gpus) view_stale_.at(static_cast<size_t>(g)) = 1;
}

void Scheduler::judge(MeasuredShare& m) const {
  if (!m.seen) return;
  auto keys = keys_.find(m.id);
  for (int64_t other : m.settled_with) {
    auto theirs = keys_.find(other);
    if (keys == keys_.end() || theirs == keys_.end()) continue;
    bool same = (!keys->second.workload.empty() && keys->second.workload == theirs->second.workload) ||
                keys->second.command == theirs->second.command;
    if (!same) {
      m.seen = false;
      m.unseen_because = "it settled together with job " + std::to_string(other) +
                         " of another command, and its share is their mean";
      return;
    }
  }
}

void Scheduler::learn(const MeasuredShare& m) {
  if (!m.seen) return;
  auto keys = keys_.find(m.id);
  if (keys != keys_.end()) history_.learn_share(keys->second, m.share);
}

std::vector<JobThroughput> Scheduler::throughput_on(const Executor& executor, int gpu) const {
  std::vector<JobThroughput> jobs;
  for (int64_t id : ledger_.jobs_on(gpu)) jobs.push_back({id, executor.normalized_throughput(id)});
  return jobs;
}

Measured Scheduler::observe(Executor& executor, double now_s) {
  Measured measured;
  Observation seen = executor.observe(now_s);
  // Jobs first: one that began to train since the last readings takes the
  // GPU as it was before these as its baseline.
  for (const JobReading& job : seen.jobs) {
    if (job.used_bytes) ledger_.observe_peak(job.id, *job.used_bytes, now_s);
    if (job.rate) ledger_.observe_rate(job.id, *job.rate);
    if (job.work) ledger_.observe_work(job.id, *job.work);
    if (job.training) ledger_.started_training(job.id, now_s);
  }
  for (const GpuReading& r : seen.gpus) {
    GpuReading& last = last_readings_.at(static_cast<size_t>(r.gpu));
    if (!same_reading(last, r)) view_stale_[static_cast<size_t>(r.gpu)] = 1;
    last = r;
    ledger_.observe(r.gpu, now_s, r.sm_activity, r.mem_free_bytes);
  }
  for (MeasuredShare& m : ledger_.settle(now_s)) {
    judge(m);
    learn(m);
    mark_stale(ledger_.jobs().at(m.id).gpus);
    measured.shares.push_back(m);
  }
  for (const JudgedJoin& j : ledger_.take_judged()) {
    mark_stale(ledger_.jobs().at(j.id).gpus);
    measured.judged.push_back(j);
  }
  for (const MeasuredPeak& p : ledger_.measure_provisional(now_s)) {
    auto keys = keys_.find(p.id);
    if (keys != keys_.end()) history_.learn_peak(keys->second, p.peak_bytes);
    mark_stale(ledger_.jobs().at(p.id).gpus);
    measured.peaks.push_back(p);
  }
  ProbeSteps probe = ledger_.take_probe_steps();
  if (!probe.resume.empty()) executor.resume(probe.resume);
  if (!probe.pause.empty()) executor.pause(probe.pause);
  while (!verdicts_due_.empty() && verdicts_due_.front() <= now_s + kEpsilon) verdicts_due_.erase(verdicts_due_.begin());
  if (watch_.watching() > 0) {
    for (int g : watch_.watched_gpus()) {
      if (ledger_.probing(g, now_s)) continue;  // its jobs' rates show a probe's pause: judged after
      for (const auto& outcome : watch_.check(g, throughput_on(executor, g), now_s)) {
        if (!outcome.stopped_growing) continue;
        ledger_.close(g, *outcome.stopped_growing);
        view_stale_[static_cast<size_t>(g)] = 1;
        measured.closed.emplace_back(g, *outcome.stopped_growing);
      }
    }
  }
  return measured;
}

Placement Scheduler::pick(const JobRequest& request) {
  const int per_node = options_.gpus_per_node;
  if (request.gpus <= 1 || per_node <= 0 || per_node >= gpus()) {
    return pick_gpus(*policy_, request, views_, options_.explain);
  }
  for (size_t first = 0; first < views_.size(); first += static_cast<size_t>(per_node)) {
    size_t end = std::min(views_.size(), first + static_cast<size_t>(per_node));
    std::vector<GpuView> node(views_.begin() + static_cast<std::ptrdiff_t>(first),
                              views_.begin() + static_cast<std::ptrdiff_t>(end));
    Placement placement = pick_gpus(*policy_, request, node, options_.explain);
    if (placement.placed()) return placement;
  }
  Placement none;
  if (options_.explain) none.reason = "no node has " + std::to_string(request.gpus) + " GPUs with room";
  return none;
}

void Scheduler::refresh_views(double now_s) {
  for (size_t g = 0; g < views_.size(); ++g) {
    bool steady = ledger_.steady(static_cast<int>(g));
    if (view_stale_[g] || !steady) views_[g] = ledger_.view(static_cast<int>(g), now_s);
    view_stale_[g] = steady ? 0 : 1;
  }
}

RoundOutcome Scheduler::round(const std::vector<WaitingJob>& queue, Executor& executor, double now_s) {
  RoundOutcome outcome;
  refresh_views(now_s);
  GpuRoom room = room_of(views_, options_.thresholds);
  const bool thresholds = policy_->within_collocation_thresholds();
  struct Refused {
    JobRequest request;
    std::string reason;
  };
  std::vector<Refused> refused;
  auto refused_like = [&refused](const JobRequest& r) -> const Refused* {
    for (const auto& f : refused) {
      if (asks_at_least(r, f.request)) return &f;
    }
    return nullptr;
  };
  int tried = 0;
  for (const WaitingJob& job : queue) {
    if (options_.window > 0 && tried++ >= options_.window) break;
    const int64_t id = job.facts.id;
    JobRequest request = request_for(job.facts);
    auto wait = [&](const std::string& why) {
      if (options_.explain) outcome.waiting[id] = why;
    };
    if (!job.estimate_pending.empty() &&
        std::none_of(views_.begin(), views_.end(), [](const GpuView& v) { return v.jobs == 0; })) {
      wait(job.estimate_pending);  // not for want of GPUs: it holds nothing back
      continue;
    }
    Placement placement;
    if (const Refused* like = refused_like(request)) {
      placement.reason = like->reason;
    } else if (thresholds && !options_.explain && !might_fit(request, room, options_.thresholds)) {
      placement.reason.clear();
    } else {
      placement = pick(request);
    }
    if (!placement.placed()) {
      if (refused.size() < 64 && !refused_like(request)) refused.push_back({request, placement.reason});
      wait(placement.reason);
      if (options_.backfill.holds_back_later_jobs(job.waited_s, job.facts.gpus)) {
        outcome.reserved_for = id;
        break;
      }
      continue;
    }
    const std::vector<int>& gpus = placement.gpus;
    if (request.provisional) {  // what is free on its GPUs, less the margin
      int64_t reservation = std::numeric_limits<int64_t>::max();
      for (int g : gpus) {
        reservation = std::min(reservation, provisional_reservation(views_.at(static_cast<size_t>(g)), options_.thresholds));
      }
      request.mem_bytes = reservation;
    }
    // The jobs already there, as the throughput rule compares them: without it.
    std::vector<std::vector<JobThroughput>> others;
    const bool watched = rule_applies() && job.throughput_comparable;
    if (watched) {
      for (int g : gpus) others.push_back(throughput_on(executor, g));
    }
    Launch launch = executor.launch(id, gpus, request);
    if (launch.outcome == Launch::Outcome::kGone) continue;
    if (launch.outcome == Launch::Outcome::kWaits) {
      wait(launch.reason);
      continue;
    }
    if (watched) {
      for (size_t k = 0; k < gpus.size(); ++k) {
        if (!watch_.joined(gpus[k], id, others[k], now_s)) continue;
        double due = now_s + options_.thresholds.throughput_window_s;
        verdicts_due_.insert(std::upper_bound(verdicts_due_.begin(), verdicts_due_.end(), due), due);
      }
    }
    ledger_.place(request, gpus, now_s);
    if (launch.used_bytes > 0) ledger_.observe_peak(id, launch.used_bytes, now_s);
    if (launch.training) ledger_.started_training(id, now_s);
    keys_[id] = job.facts.keys;
    for (int g : gpus) views_[static_cast<size_t>(g)] = ledger_.view(g, now_s);
    mark_stale(gpus);  // the next round's readings include this job
    room = room_of(views_, options_.thresholds);
    outcome.started.push_back(id);
  }
  return outcome;
}

void Scheduler::adopt(const JobRequest& request, const JobKeys& keys, const std::vector<int>& gpus, double now_s,
                      int64_t used_bytes) {
  ledger_.place(request, gpus, now_s);
  if (used_bytes > 0) ledger_.observe_peak(request.id, used_bytes, now_s);
  keys_[request.id] = keys;
  mark_stale(gpus);
}

std::optional<MeasuredShare> Scheduler::stop(Executor& executor, int64_t id, double now_s) {
  executor.stop(id);
  return ended(id, now_s);
}

std::optional<MeasuredShare> Scheduler::ended(int64_t id, double now_s) {
  auto job = ledger_.jobs().find(id);
  if (job == ledger_.jobs().end()) return std::nullopt;
  mark_stale(job->second.gpus);
  std::optional<MeasuredShare> measured = ledger_.remove(id, now_s);
  if (measured) {
    judge(*measured);
    learn(*measured);
  }
  keys_.erase(id);
  return measured;
}

std::optional<JobRequest> Scheduler::estimate_arrived(int64_t id, int64_t mem_bytes) {
  if (!ledger_.estimate_arrived(id, mem_bytes)) return std::nullopt;
  const LedgerEntry& job = ledger_.jobs().at(id);
  mark_stale(job.gpus);
  return job.request;
}

double Scheduler::next_due_s() const {
  double next = std::min(ledger_.next_settle_s(), ledger_.next_provisional_s());
  if (!verdicts_due_.empty()) next = std::min(next, verdicts_due_.front());
  return next;
}

}  // namespace colo::sched
