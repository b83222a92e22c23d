#include "colo/sched/gpu_ledger.h"

#include <algorithm>
#include <limits>

#include "colo/core/table.h"

namespace colo::sched {
namespace {

// A neighbour's slowdown is read up to this: a stalled neighbour (a pause,
// a checkpoint) says nothing of what the newcomer took.
constexpr double kMaxSlowdown = 0.9;
// A GPU at least this busy may be oversubscribed: its neighbours' demand is
// their shares added up, which its activity (at most 1) cannot show.
constexpr double kBusyActivity = 0.85;
// A neighbour's rate while a job settles is read from its work only over at
// least this much of its training (progress files are written once a second).
constexpr double kMinWorkSpanS = 1.0;
// Neighbours that lost less of their rate than this (progress reports are
// that noisy) show nothing of what a newcomer took.
constexpr double kMinSeenSlowdown = 0.03;
// No job is taken to run below this fraction of its speed alone.
constexpr double kMinSpeed = 0.05;

double averaging_window_s(const Thresholds& t) { return std::max(t.settle_active_s, 0.5); }

}  // namespace

GpuLedger::GpuLedger(std::vector<int64_t> mem_total_bytes, CollocationMode mode, Thresholds thresholds)
    : mode_(mode), thresholds_(thresholds) {
  for (int64_t total : mem_total_bytes) {
    GpuState gpu;
    gpu.mem_total_bytes = total;
    gpus_.push_back(gpu);
  }
  on_gpu_.resize(gpus_.size());
}

double GpuLedger::mean_activity(const GpuState& gpu, double now_s, double since_s, bool during_pauses) const {
  auto paused_at = [&gpu](double t) -> const GpuState::Pause* {
    for (const auto& p : gpu.pauses) {
      if (t > p.from_s && t <= p.until_s) return &p;
    }
    return nullptr;
  };
  double sum = 0;
  int n = 0;
  std::optional<double> first, last;
  bool one_value = true;  // then the mean is that reading exactly, however many readings there are
  const GpuState::Pause* skipped = nullptr;
  double from = std::max(now_s - averaging_window_s(thresholds_), since_s);
  for (const auto& [t, a] : gpu.activity) {
    if (t <= from) continue;
    if (!during_pauses) {
      if (const GpuState::Pause* p = paused_at(t)) {
        skipped = p;
        continue;
      }
    }
    if (first && a != *first) one_value = false;
    if (!first) first = a;
    last = a;
    sum += a;
    ++n;
  }
  if (n == 0) {
    // No reading in the window: the latest one stands, unless a pause made it.
    if (gpu.activity.empty()) return 0;
    if (!during_pauses && !skipped) skipped = paused_at(gpu.activity.back().first);
    return skipped ? skipped->activity_before : gpu.activity.back().second;
  }
  return one_value ? *last : sum / n;
}

void GpuLedger::place(const JobRequest& request, const std::vector<int>& gpus, double now_s) {
  LedgerEntry entry;
  entry.request = request;
  entry.gpus = gpus;
  entry.start_s = now_s;
  entry.sm_share = request.sm_share;
  entry.settling = request.sm_share <= 0 && mode_ != CollocationMode::kExclusive;
  if (!gpus.empty()) entry.activity_before = mean_activity(gpus_.at(static_cast<size_t>(gpus[0])), now_s);
  remove(request.id, now_s);
  entry.judged = !entry.settling && mode_ == CollocationMode::kMps && !gpus.empty() &&
                 !on_gpu_.at(static_cast<size_t>(gpus[0])).empty() &&
                 view(gpus[0], now_s).sm_activity > thresholds_.max_sm_activity;
  if ((entry.settling || entry.judged) && !gpus.empty()) take_neighbour_rates(request.id, entry);
  jobs_[request.id] = entry;
  if (entry.settling || entry.judged) ++settling_;
  if (request.provisional) ++provisional_;
  for (int g : gpus) {
    on_gpu_.at(static_cast<size_t>(g)).push_back(request.id);
    if (entry.settling || entry.judged) ++gpus_.at(static_cast<size_t>(g)).settling_jobs;
  }
}

void GpuLedger::close(int gpu, const std::string& why) {
  std::string& saturated = gpus_.at(static_cast<size_t>(gpu)).saturated;
  if (saturated.empty()) saturated = why;
}

std::optional<MeasuredShare> GpuLedger::remove(int64_t id, double now_s) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  std::optional<MeasuredShare> measured;
  const LedgerEntry& job = it->second;
  bool probed = false;  // a probe of it ends unfinished: its readings were of it alone for part of the window
  for (auto p = probes_.begin(); p != probes_.end(); ++p) {
    if (p->id == id) {
      release_probe(*p, now_s);
      probes_.erase(p);
      probed = true;
      break;
    }
    p->paused.erase(std::remove(p->paused.begin(), p->paused.end(), id), p->paused.end());
  }
  if (!probed && job.settling && job.active_since_s >= 0 &&
      now_s - job.active_since_s >= thresholds_.settle_active_s / 2) {
    measured = measure(id, job, now_s);
    measured->saturated = false;  // it is leaving: nothing to close
  }
  for (int g : it->second.gpus) {
    gpus_.at(static_cast<size_t>(g)).saturated.clear();
    gpus_.at(static_cast<size_t>(g)).last_rise = 1;  // room again: the next job is measured afresh
    if (job.settling || job.judged) --gpus_.at(static_cast<size_t>(g)).settling_jobs;
    auto& ids = on_gpu_.at(static_cast<size_t>(g));
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
  }
  if (job.settling || job.judged) --settling_;
  if (job.request.provisional) --provisional_;
  jobs_.erase(it);
  return measured;
}

void GpuLedger::observe_peak(int64_t id, int64_t bytes, double now_s) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  LedgerEntry& job = it->second;
  if (bytes > 0 && job.active_since_s < 0) job.active_since_s = now_s;
  if (bytes > job.peak_bytes + job.peak_bytes / 50) {  // grew by more than 2%
    job.last_growth_s = now_s;
    job.awaits_change = false;
  }
  job.peak_bytes = std::max(job.peak_bytes, bytes);
}

void GpuLedger::observe_rate(int64_t id, double rate) {
  auto it = jobs_.find(id);
  if (it != jobs_.end() && rate > 0) it->second.rate = rate;
}

void GpuLedger::observe_work(int64_t id, const WorkDone& work) {
  auto it = jobs_.find(id);
  if (it != jobs_.end()) it->second.work = work;
}

void GpuLedger::take_neighbour_rates(int64_t id, LedgerEntry& job) const {
  job.neighbour_rates_before.clear();
  job.neighbour_work_before.clear();
  job.neighbour_demand_before = 0;
  job.neighbour_speed_before.reset();
  job.neighbours_before = 0;
  double speeds = 0;
  int timed = 0;
  for (int64_t other : on_gpu_.at(static_cast<size_t>(job.gpus.at(0)))) {
    if (other == id) continue;
    const LedgerEntry& o = jobs_.at(other);
    if (o.rate) job.neighbour_rates_before[other] = *o.rate;
    if (o.work) job.neighbour_work_before[other] = *o.work;
    job.neighbour_demand_before += o.sm_share;  // 0 while unknown
    ++job.neighbours_before;
    if (o.rate && o.solo_rate && *o.solo_rate > 0) {
      speeds += std::min(1.0, *o.rate / *o.solo_rate);
      ++timed;
    }
  }
  if (timed > 0) job.neighbour_speed_before = speeds / timed;
}

void GpuLedger::started_training(int64_t id, double now_s) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.training_since_s >= 0) return;
  LedgerEntry& job = it->second;
  job.training_since_s = now_s;
  if (job.active_since_s < 0) job.active_since_s = now_s;
  // Measured alone before it reported training (its memory went quiet in
  // its start-up): what it showed may be start-up. Once more, as it trains;
  // meanwhile it keeps that share.
  if (job.measured_before_training && thresholds_.probe_alone && !job.gpus.empty()) {
    job.measured_before_training = false;
    job.remeasuring = true;
    job.settling = true;
    ++settling_;
    for (int g : job.gpus) ++gpus_.at(static_cast<size_t>(g)).settling_jobs;
  }
  // Its baseline is the GPU as it was just before it began to train, so
  // that neighbours which joined during its start-up are not counted as its.
  if ((job.settling || job.judged) && !job.gpus.empty()) {
    job.activity_before = mean_activity(gpus_.at(static_cast<size_t>(job.gpus[0])), now_s);
    take_neighbour_rates(id, job);
  }
  // Alone on its GPU, what the GPU shows is its own: its rise counts from 0.
  if (job.remeasuring && neighbours_of(id, job).empty()) job.activity_before = 0;
}

GpuLedger::Demand GpuLedger::neighbour_demand(const LedgerEntry& job) {
  if (job.activity_before < kBusyActivity) return {job.activity_before, false};
  // The shares known for them may be floors (a share not seen on a full
  // GPU) or an earlier job's; their speed is read from their own rates.
  // No job uses more than the whole GPU alone: a speed read far too low (a
  // solo rate learned high) asks no more than one GPU per neighbour.
  if (job.neighbour_speed_before) {
    double demand = job.activity_before / std::max(*job.neighbour_speed_before, kMinSpeed);
    return {std::clamp(demand, job.activity_before, std::max(1.0, static_cast<double>(job.neighbours_before))), true};
  }
  return {std::max(job.activity_before, job.neighbour_demand_before), false};
}

void GpuLedger::learn_solo_rates(int64_t id, LedgerEntry& job, double speed) {
  speed = std::clamp(speed, kMinSpeed, 1.0);
  if (job.rate) job.solo_rate = *job.rate / speed;
  for (int64_t other : on_gpu_.at(static_cast<size_t>(job.gpus.at(0)))) {
    if (other == id) continue;
    LedgerEntry& o = jobs_.at(other);
    auto before = job.neighbour_rates_before.find(other);
    if (job.activity_before < kBusyActivity && before != job.neighbour_rates_before.end()) {
      o.solo_rate = before->second;  // it ran at full speed at the baseline
    } else if (!o.solo_rate && o.rate) {
      o.solo_rate = *o.rate / speed;  // it slowed as the newcomer runs
    }
  }
}

std::optional<double> GpuLedger::rate_since(const LedgerEntry& neighbour, const LedgerEntry& job, int64_t neighbour_id) {
  auto mark = job.neighbour_work_before.find(neighbour_id);
  if (mark != job.neighbour_work_before.end() && neighbour.work &&
      neighbour.work->clock_s - mark->second.clock_s >= kMinWorkSpanS) {
    return (neighbour.work->units - mark->second.units) / (neighbour.work->clock_s - mark->second.clock_s);
  }
  return neighbour.rate;
}

double GpuLedger::began_s(const LedgerEntry& job) {
  if (job.training_since_s >= 0) return job.training_since_s;
  return job.active_since_s >= 0 ? job.active_since_s : job.start_s;
}

bool GpuLedger::share_counts(const LedgerEntry& job, double now_s) const {
  if (!thresholds_.count_shares_once_training || mode_ != CollocationMode::kMps || job.settling || job.sm_share <= 0) {
    return true;
  }
  return job.training_since_s >= 0 || now_s >= settles_at(job) - 1e-9;
}

double GpuLedger::settles_at(const LedgerEntry& job) const {
  if (job.training_since_s >= 0) {
    return job.training_since_s + thresholds_.settle_warmup_s + thresholds_.settle_active_s;
  }
  double latest = job.start_s + thresholds_.settle_s;
  if (job.active_since_s < 0 || job.awaits_change) return latest;
  return std::min(latest, std::max(job.active_since_s, job.last_growth_s) + thresholds_.settle_quiet_s);
}

MeasuredShare GpuLedger::measure(int64_t id, const LedgerEntry& job, double now_s) {
  int first = job.gpus.at(0);
  const double began = began_s(job);
  const double baseline_at = job.training_since_s >= 0 ? job.training_since_s : job.start_s;
  double activity = mean_activity(gpus_.at(static_cast<size_t>(first)), now_s, began + thresholds_.settle_warmup_s);
  double rise = activity - job.activity_before;
  // Settling jobs whose activity rose with its own, each by the part of the
  // measuring window it was on the GPU: one that shows no memory yet has
  // launched no kernel, and one that began late rose for part of it.
  double rising = 1;
  std::vector<int64_t> settled_with;
  const double from = began + thresholds_.settle_warmup_s;
  // A job of known share that joined meanwhile added at most what the GPU
  // had left: activity cannot pass 1.
  double headroom = std::max(0.0, 1.0 - job.activity_before);
  for (int64_t other : on_gpu_.at(static_cast<size_t>(first))) {
    const LedgerEntry& o = jobs_.at(other);
    // Jobs that began within its baseline's window or later rose with it.
    if (other == id || began_s(o) <= baseline_at - averaging_window_s(thresholds_)) continue;
    // One that joined of unknown share rose with it, even if it has settled
    // since: its measured share is what it uses alone, not what it added.
    if (o.settling || o.request.sm_share <= 0) {
      if (o.active_since_s < 0 && o.training_since_s < 0) continue;
      double part = now_s > from ? std::clamp((now_s - std::max(began_s(o), from)) / (now_s - from), 0.0, 1.0) : 1.0;
      rising += part;
      if (part > 0) settled_with.push_back(other);
    } else {
      double added = std::min(o.sm_share, headroom);
      rise -= added;
      headroom -= added;
    }
  }
  gpus_.at(static_cast<size_t>(first)).last_rise = rise;
  // The SM time its neighbours lost since its baseline, where they report rates.
  double lost = 0;
  int neighbours = 0;
  MeasuredShare m;
  m.id = id;
  m.rise = rise;
  m.settled_with = std::move(settled_with);
  for (const auto& [other, before] : job.neighbour_rates_before) {
    auto o = jobs_.find(other);
    if (o == jobs_.end() || before <= 0) continue;
    std::optional<double> rate_now = rate_since(o->second, job, other);
    if (!rate_now) continue;
    double loss = std::clamp(1.0 - *rate_now / before, 0.0, kMaxSlowdown);
    m.neighbour_losses.emplace_back(other, loss);
    lost += loss;
    ++neighbours;
  }
  double share = rise / rising;
  bool had_others = on_gpu_.at(static_cast<size_t>(first)).size() > 1;
  if (neighbours > 0) {
    // Neighbours of demand D that lose a fraction d of their rate gave up
    // D*d of SM time; what it took in all is that and its rise, at the
    // 1 - d of the GPU's time it got itself.
    double slowdown = lost / neighbours;
    m.neighbour_slowdown = slowdown;
    const auto [demand, from_speeds] = neighbour_demand(job);
    m.neighbour_demand = demand;
    m.demand_from_speeds = from_speeds;
    share = (rise + demand * slowdown) / rising / (1.0 - slowdown);
    // They ran at activity / demand of their speed alone, and lost d of it.
    if (demand > 0) m.speed = std::min(1.0, job.activity_before / demand) * (1.0 - slowdown);
  } else if (!had_others || activity < kBusyActivity) {
    m.speed = 1.0;
  }
  m.share = std::clamp(share, kMinMeasuredShare, 1.0);
  m.saturated = had_others && rise < thresholds_.min_sm_gain && activity >= thresholds_.saturation_floor;
  // On a GPU already full, a job that raised its activity by nothing and
  // slowed no neighbour that reports a rate left no trace to read: it may
  // use 0.04 or 0.8 alone.
  m.seen = !(had_others && job.activity_before >= kBusyActivity && rise < thresholds_.min_sm_gain &&
             m.neighbour_slowdown.value_or(0) < kMinSeenSlowdown);
  if (!m.seen) m.unseen_because = "its GPU was already full and showed nothing of it";
  return m;
}

void GpuLedger::observe(int gpu, double now_s, std::optional<double> sm_activity,
                        std::optional<int64_t> mem_free_bytes) {
  GpuState& state = gpus_.at(static_cast<size_t>(gpu));
  state.measured_free_bytes = mem_free_bytes;
  if (!sm_activity) return;
  // An unchanged reading soon after the last adds nothing to a mean (the
  // simulator observes at every event); readings older than the averaging
  // window are never read again.
  if (!state.activity.empty() && state.activity.back().second == *sm_activity &&
      now_s - state.activity.back().first < 0.5) {
    return;
  }
  state.activity.emplace_back(now_s, *sm_activity);
  double keep_after = now_s - averaging_window_s(thresholds_);
  while (state.activity.size() > 1 && state.activity.front().first <= keep_after) state.activity.pop_front();
  while (!state.pauses.empty() && state.pauses.front().until_s <= keep_after) state.pauses.pop_front();
}

std::vector<MeasuredShare> GpuLedger::settle(double now_s) {
  std::vector<MeasuredShare> measured;
  if (settling_ == 0) return measured;
  end_probes(now_s, measured);
  for (auto& [id, job] : jobs_) {
    if (job.judged && now_s >= settles_at(job) - 1e-9) judge(id, job, now_s);
    if (!job.settling || now_s < settles_at(job) - 1e-9) continue;
    if (thresholds_.probe_alone) {
      bool probed = std::any_of(probes_.begin(), probes_.end(), [id = id](const Probe& p) { return p.id == id; });
      if (probed || start_probe(id, job, now_s) != ProbeStart::kNotProbed) continue;
    }
    MeasuredShare m = measure(id, job, now_s);
    if (m.speed) learn_solo_rates(id, job, *m.speed);
    conclude(id, job, m);
    measured.push_back(m);
  }
  return measured;
}

void GpuLedger::judge(int64_t id, LedgerEntry& job, double now_s) {
  const MeasuredShare m = measure(id, job, now_s);
  job.judged = false;
  --settling_;
  for (int g : job.gpus) --gpus_.at(static_cast<size_t>(g)).settling_jobs;
  judged_.push_back({id, job.sm_share, m.rise, m.saturated});
  if (!m.saturated) return;
  for (int g : job.gpus) {
    close(g, "SM activity stopped growing (job " + std::to_string(id) + ", of known share " + fixed(job.sm_share, 2) +
                 ", added " + fixed(std::max(m.rise, 0.0), 2) + ")");
  }
}

void GpuLedger::conclude(int64_t id, LedgerEntry& job, MeasuredShare& m) {
  m.once_training = job.remeasuring;
  job.measured_before_training = job.training_since_s < 0;
  job.remeasuring = false;
  job.settling = false;
  --settling_;
  for (int g : job.gpus) --gpus_.at(static_cast<size_t>(g)).settling_jobs;
  job.sm_share = m.share;
  if (m.saturated) {
    for (int g : job.gpus) {
      gpus_.at(static_cast<size_t>(g)).saturated = "SM activity stopped growing (job " + std::to_string(id) +
                                                   " added " + fixed(m.share, 2) + ")";
    }
  }
}

double GpuLedger::next_settle_s() const {
  double next = std::numeric_limits<double>::infinity();
  if (settling_ == 0) return next;
  for (const auto& [id, job] : jobs_) {
    if (!job.settling && !job.judged) continue;
    double due = settles_at(job);
    if (thresholds_.probe_alone && job.settling) {
      auto probe = std::find_if(probes_.begin(), probes_.end(), [id = id](const Probe& p) { return p.id == id; });
      due = probe != probes_.end() ? probe_ends_s(*probe) : std::max(due, probe_blocks_until(id, job));
    }
    next = std::min(next, due);
  }
  return next;
}

double GpuLedger::provisional_due_s(const LedgerEntry& job) const {
  double quiet_since = std::max(job.active_since_s, job.last_growth_s);
  return job.training_since_s >= 0 ? std::max(job.training_since_s, quiet_since) + thresholds_.settle_active_s
                                   : quiet_since + thresholds_.settle_quiet_s;
}

double GpuLedger::next_provisional_s() const {
  double next = std::numeric_limits<double>::infinity();
  if (provisional_ == 0) return next;
  for (const auto& [id, job] : jobs_) {
    if (job.request.provisional && job.active_since_s >= 0) next = std::min(next, provisional_due_s(job));
  }
  return next;
}

std::vector<MeasuredPeak> GpuLedger::measure_provisional(double now_s) {
  std::vector<MeasuredPeak> measured;
  if (provisional_ == 0) return measured;
  for (auto& [id, job] : jobs_) {
    if (!job.request.provisional || job.active_since_s < 0) continue;
    if (now_s < provisional_due_s(job) - 1e-9) continue;
    // Never low: memory the GPU shows in use that no other job's measured
    // peak accounts for is counted as this job's (a process list that lags
    // under MPS once gave a training GPT-2 544 MiB of its 15 GiB).
    int64_t peak = job.peak_bytes;
    const GpuState& gpu = gpus_.at(static_cast<size_t>(job.gpus.at(0)));
    if (gpu.measured_free_bytes) {
      int64_t unaccounted = gpu.mem_total_bytes - *gpu.measured_free_bytes;
      for (int64_t other : on_gpu_.at(static_cast<size_t>(job.gpus.at(0)))) {
        if (other != id) unaccounted -= jobs_.at(other).peak_bytes;
      }
      peak = std::max(peak, unaccounted);
    }
    job.peak_bytes = peak;
    job.request.provisional = false;
    job.request.mem_bytes = peak + peak / 10;
    --provisional_;
    measured.push_back({id, peak});
  }
  return measured;
}

bool GpuLedger::estimate_arrived(int64_t id, int64_t mem_bytes) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.request.provisional) return false;
  it->second.request.provisional = false;
  it->second.request.mem_bytes = std::max(mem_bytes, it->second.peak_bytes);
  --provisional_;
  return true;
}

std::vector<JudgedJoin> GpuLedger::take_judged() {
  std::vector<JudgedJoin> judged;
  std::swap(judged, judged_);
  return judged;
}

std::vector<int64_t> GpuLedger::jobs_on(int gpu) const { return on_gpu_.at(static_cast<size_t>(gpu)); }

double energy_share_for(double sm_share) { return sm_share > 0 ? sm_share : 0.5; }

double GpuLedger::energy_share(int64_t id) const {
  auto it = jobs_.find(id);
  return energy_share_for(it == jobs_.end() ? 0 : it->second.sm_share);
}

bool GpuLedger::steady(int gpu) const {
  const GpuState& state = gpus_.at(static_cast<size_t>(gpu));
  if (state.settling_jobs > 0) return false;
  if (!state.pauses.empty()) return false;  // which readings count changes as a pause's readings age
  if (thresholds_.count_shares_once_training && mode_ == CollocationMode::kMps) {
    for (int64_t id : on_gpu_.at(static_cast<size_t>(gpu))) {
      const LedgerEntry& job = jobs_.at(id);
      // Its share counts from a time to come (share_counts): the view changes with time.
      if (job.sm_share > 0 && job.training_since_s < 0) return false;
    }
  }
  for (const auto& reading : state.activity) {
    if (reading.second != state.activity.front().second) return false;
  }
  return true;
}

std::vector<GpuView> GpuLedger::views(double now_s) const {
  std::vector<GpuView> out;
  out.reserve(gpus_.size());
  for (size_t g = 0; g < gpus_.size(); ++g) out.push_back(view(static_cast<int>(g), now_s));
  return out;
}

GpuView GpuLedger::view(int index, double now_s) const {
  size_t g = static_cast<size_t>(index);
  {
    const GpuState& state = gpus_.at(g);
    GpuView v;
    v.index = static_cast<int>(g);
    v.mem_total_bytes = state.mem_total_bytes;
    int64_t reserved = 0;
    double shares = 0;
    int settling = 0;
    int starting = 0;  // jobs of known share whose share does not count yet
    int judged = 0;    // jobs of known share that joined past the ceiling, their rise not yet read
    int judged_training = 0;  // those of them whose share counts
    for (int64_t id : on_gpu_[g]) {
      const LedgerEntry& job = jobs_.at(id);
      ++v.jobs;
      int64_t reservation = job.request.mem_bytes ? *job.request.mem_bytes + thresholds_.mem_margin_bytes : 0;
      reserved += std::max(reservation, job.peak_bytes);
      if (share_counts(job, now_s)) {
        shares += job.sm_share;
      } else {
        ++starting;
      }
      if (job.request.must_run_alone) v.held_exclusively = true;
      if (job.request.provisional && v.provisional_reason.empty()) {
        v.provisional_reason = "job " + std::to_string(id) + " of unknown memory is not yet measured";
      }
      if (job.judged) ++judged;
      if (job.judged && share_counts(job, now_s)) ++judged_training;
      if (job.settling && ++settling >= std::max(thresholds_.max_settling_per_gpu, 1) && v.settling_reason.empty()) {
        v.settling_reason = (settling == 1 ? "job " + std::to_string(id) + " settling"
                                           : std::to_string(settling) + " jobs settling, the last job " +
                                                 std::to_string(id)) +
                            " (SM share unknown, at most " + fixed(std::max(settles_at(job) - now_s, 0.0), 1) +
                            " s left)";
      }
    }
    v.closed_reason = state.saturated;
    // Newcomers whose SM use the GPU does not show yet, of unknown share or
    // of a known one that does not count yet: max_settling_per_gpu at most,
    // together, so that each round's joiners can be seen to add or not.
    // Where known shares count once their jobs train, a job of known share
    // that joins is one such newcomer too, so a full count of settling jobs
    // keeps it off as well. A judged job that trains is one more.
    const bool known_shares_count_late = thresholds_.count_shares_once_training && mode_ == CollocationMode::kMps;
    const int measuring = settling + judged_training;
    if (v.closed_reason.empty() && (starting > 0 || known_shares_count_late) &&
        starting + measuring >= std::max(thresholds_.max_settling_per_gpu, 1)) {
      if (starting > 0) {
        v.closed_reason = std::to_string(starting) + " jobs starting up (their SM shares count once they train)";
        if (measuring > 0) v.closed_reason += " and " + std::to_string(measuring) + " settling";
      } else {
        v.closed_reason = std::to_string(measuring) + " jobs settling (a newcomer's SM share would count only once it "
                          "trains)";
      }
    }
    // Growth is read from the GPU's activity: one that never gave a reading
    // stays within what its known shares allow.
    v.grows_past_ceiling = mode_ == CollocationMode::kMps && v.jobs > 0 && settling == 0 && judged == 0 &&
                           state.saturated.empty() && state.last_rise >= thresholds_.min_sm_gain &&
                           !state.activity.empty();
    if (mode_ == CollocationMode::kExclusive && v.jobs > 0) v.held_exclusively = true;
    v.mem_free_bytes = v.mem_total_bytes - reserved;
    if (state.measured_free_bytes) v.mem_free_bytes = std::min(v.mem_free_bytes, *state.measured_free_bytes);
    v.sm_activity = std::max(mean_activity(state, now_s), std::min(1.0, shares));
    return v;
  }
}

}  // namespace colo::sched
