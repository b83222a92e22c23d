// The ledger's probes (Thresholds::probe_alone): a settling job measured
// alone, the jobs beside it paused for a few seconds. On a full GPU the
// rise of its activity shows nothing of what a newcomer uses alone, and its
// neighbours' rates show it only as far as they report them; with them
// paused, the GPU's activity is the newcomer's own.

#include <algorithm>

#include "colo/core/table.h"
#include "colo/sched/gpu_ledger.h"

namespace colo::sched {

std::vector<int64_t> GpuLedger::neighbours_of(int64_t id, const LedgerEntry& job) const {
  std::vector<int64_t> out;
  for (int g : job.gpus) {
    for (int64_t other : on_gpu_.at(static_cast<size_t>(g))) {
      if (other != id && std::find(out.begin(), out.end(), other) == out.end()) out.push_back(other);
    }
  }
  return out;
}

double GpuLedger::probe_blocks_until(int64_t id, const LedgerEntry& job) const {
  double until = -1;
  for (int g : job.gpus) until = std::max(until, gpus_.at(static_cast<size_t>(g)).probe_ends_s);
  for (int64_t other : neighbours_of(id, job)) {
    for (int g : jobs_.at(other).gpus) until = std::max(until, gpus_.at(static_cast<size_t>(g)).probe_ends_s);
  }
  return until;
}

double GpuLedger::probe_ends_s(const Probe& probe) const {
  return probe.since_s + thresholds_.probe_drain_s + thresholds_.settle_active_s;
}

GpuLedger::ProbeStart GpuLedger::start_probe(int64_t id, LedgerEntry& job, double now_s) {
  std::vector<int64_t> neighbours = neighbours_of(id, job);
  if (neighbours.empty() || gpus_.at(static_cast<size_t>(job.gpus.at(0))).activity.empty()) {
    return ProbeStart::kNotProbed;
  }
  if (probe_blocks_until(id, job) > now_s + 1e-9) return ProbeStart::kWaits;
  Probe probe;
  probe.id = id;
  probe.since_s = now_s;
  probe.paused = neighbours;
  probe.gpus = job.gpus;
  for (int64_t other : neighbours) {
    for (int g : jobs_.at(other).gpus) {
      if (std::find(probe.gpus.begin(), probe.gpus.end(), g) == probe.gpus.end()) probe.gpus.push_back(g);
    }
  }
  // What the rise rule reads now, before the pause: its rise (and whether
  // the GPU stopped growing), and the solo rates its neighbours' rates show,
  // unless a recent probe's pause is still in them.
  const bool rates_clean = !probing(job.gpus.at(0), now_s);
  probe.beside = measure(id, job, now_s);
  if (probe.beside.speed && rates_clean) learn_solo_rates(id, job, *probe.beside.speed);
  const double ends = probe_ends_s(probe);
  const double quiet = ends + std::max(thresholds_.settle_active_s, thresholds_.throughput_window_s);
  for (int g : probe.gpus) {
    GpuState& gpu = gpus_.at(static_cast<size_t>(g));
    gpu.probe_ends_s = ends;
    gpu.probe_quiet_s = quiet;
    // A reading covers the time since the one before: the paused jobs show
    // in the readings again about probe_drain_s after they resume.
    gpu.pauses.push_back({now_s, ends + thresholds_.probe_drain_s, mean_activity(gpu, now_s)});
  }
  steps_.pause.insert(steps_.pause.end(), neighbours.begin(), neighbours.end());
  probes_.push_back(std::move(probe));
  return ProbeStart::kStarted;
}

void GpuLedger::release_probe(const Probe& probe, double now_s) {
  steps_.resume.insert(steps_.resume.end(), probe.paused.begin(), probe.paused.end());
  for (int g : probe.gpus) {
    GpuState& gpu = gpus_.at(static_cast<size_t>(g));
    gpu.probe_ends_s = std::min(gpu.probe_ends_s, now_s);
    if (!gpu.pauses.empty()) {
      gpu.pauses.back().until_s = std::min(gpu.pauses.back().until_s, now_s + thresholds_.probe_drain_s);
    }
    gpu.probe_quiet_s = std::min(gpu.probe_quiet_s,
                                 now_s + std::max(thresholds_.settle_active_s, thresholds_.throughput_window_s));
  }
}

int GpuLedger::readings_since(const GpuState& gpu, double since_s) const {
  return static_cast<int>(std::count_if(gpu.activity.begin(), gpu.activity.end(),
                                        [since_s](const auto& reading) { return reading.first > since_s; }));
}

void GpuLedger::end_probes(double now_s, std::vector<MeasuredShare>& measured) {
  for (auto it = probes_.begin(); it != probes_.end();) {
    if (now_s < probe_ends_s(*it) - 1e-9) {
      ++it;
      continue;
    }
    LedgerEntry& job = jobs_.at(it->id);
    const GpuState& gpu = gpus_.at(static_cast<size_t>(job.gpus.at(0)));
    const double from = it->since_s + thresholds_.probe_drain_s;
    MeasuredShare m = it->beside;
    if (m.seen) m.beside = m.share;
    m.alone = true;
    m.speed.reset();  // its rate sped up alone: solo rates were learned when the probe began
    m.settled_with.clear();
    if (readings_since(gpu, from) > 0) {
      // A job of several GPUs: its busiest one, as its share counts on each.
      double alone = 0;
      for (int g : job.gpus) {
        const GpuState& other = gpus_.at(static_cast<size_t>(g));
        if (readings_since(other, from) > 0) alone = std::max(alone, mean_activity(other, now_s, from, true));
      }
      m.share = std::clamp(alone, kMinMeasuredShare, 1.0);
      m.seen = true;
      m.unseen_because.clear();
    } else {
      m.seen = false;
      m.unseen_because = "its GPU gave no reading while it ran alone";
    }
    release_probe(*it, now_s);
    // Its first progress report came after the measured stretch began (less
    // its first steps' warm-up): that stretch mixed start-up with training.
    const bool began_training_meanwhile =
        job.training_since_s >= 0 && job.training_since_s + thresholds_.settle_warmup_s > from + 1e-9;
    if (m.seen && began_training_meanwhile) {
      m.again = true;
      m.seen = false;
      m.unseen_because = "it used " + fixed(m.share, 2) +
                         " alone but began training while it was measured: it is measured again from its first "
                         "progress report";
    } else if (m.seen && job.training_since_s < 0 && m.share < thresholds_.min_started_share &&
               now_s < job.start_s + thresholds_.settle_s - 1e-9) {
      m.again = true;
      m.seen = false;
      m.unseen_because = "it used " + fixed(m.share, 2) +
                         " alone and reports no training: most likely still starting up, it is measured again";
      job.awaits_change = true;
    } else {
      conclude(it->id, job, m);
    }
    measured.push_back(m);
    it = probes_.erase(it);
  }
}

ProbeSteps GpuLedger::take_probe_steps() {
  ProbeSteps steps;
  std::swap(steps, steps_);
  return steps;
}

bool GpuLedger::probing(int gpu, double now_s) const { return now_s < gpus_.at(static_cast<size_t>(gpu)).probe_quiet_s; }

}  // namespace colo::sched
