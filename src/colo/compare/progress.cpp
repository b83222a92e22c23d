#include "colo/compare/progress.h"

#include <algorithm>
#include <chrono>

#include "colo/core/progress_file.h"
#include "colo/core/stopwatch.h"

namespace colo::compare {

ProgressWatch::ProgressWatch(std::vector<std::string> paths, double interval_s)
    : paths_(std::move(paths)), interval_s_(interval_s), readings_(paths_.size()), counted_(paths_.size()) {
  thread_ = std::thread([this] {
    while (!stopping_) {
      read_all();
      std::this_thread::sleep_for(std::chrono::duration<double>(interval_s_));
    }
  });
}

ProgressWatch::~ProgressWatch() { stop(); }

void ProgressWatch::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  thread_.join();
  read_all();  // the last writes, made as the processes ended
}

void ProgressWatch::read_all() {
  for (size_t i = 0; i < paths_.size(); ++i) {
    std::optional<ProgressReading> reading = read_progress_file(paths_[i]);
    if (!reading) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<TimedProgress>& seen = readings_[i];
    Counted& counted = counted_[i];
    if (reading->samples == counted.last_written) continue;
    // A process that trains in parts (arrays one after another, an array
    // retried after running out of memory) starts each part's count at 0:
    // the earlier parts' samples carry over.
    if (reading->samples < counted.last_written) {
      counted.carried += counted.last_written;
      counted.carried_s += counted.last_train_s;
    }
    counted.last_written = reading->samples;
    counted.last_train_s = reading->train_s;
    TimedProgress timed{reading->at_unix_s > 0 ? reading->at_unix_s : unix_time_s(),
                        counted.carried + reading->samples, counted.carried_s + reading->train_s};
    if (!seen.empty() && timed.unix_s < seen.back().unix_s) continue;
    seen.push_back(timed);
  }
}

std::vector<TimedProgress> ProgressWatch::readings(size_t i) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return readings_.at(i);
}

namespace {

using Intervals = std::vector<std::pair<double, double>>;

// One stretch in which a process trained, and the samples it trained there.
struct Span {
  double from = 0, to = 0;
  int64_t samples = 0;
  size_t process = 0;
};

// `ranges` merged into disjoint sorted intervals.
Intervals merged(Intervals ranges) {
  std::sort(ranges.begin(), ranges.end());
  Intervals out;
  for (const auto& r : ranges) {
    if (!out.empty() && r.first <= out.back().second) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

double length(const Intervals& intervals) {
  double total = 0;
  for (const auto& [from, to] : intervals) total += to - from;
  return total;
}

// The intervals in which the most of `ranges` overlap, and how many that is.
std::pair<Intervals, size_t> most_overlapped(const Intervals& ranges) {
  std::vector<std::pair<double, int>> edges;
  for (const auto& [from, to] : ranges) {
    edges.emplace_back(from, +1);
    edges.emplace_back(to, -1);
  }
  std::sort(edges.begin(), edges.end());  // at equal times, ends (-1) first
  int open = 0, most = 0;
  for (const auto& e : edges) most = std::max(most, open += e.second);
  Intervals out;
  open = 0;
  for (size_t k = 0; k < edges.size(); ++k) {
    open += edges[k].second;
    if (open == most && k + 1 < edges.size() && edges[k + 1].first > edges[k].first) {
      out.emplace_back(edges[k].first, edges[k + 1].first);
    }
  }
  return {merged(out), static_cast<size_t>(most)};
}

Intervals intersection(const Intervals& a, const Intervals& b) {
  Intervals out;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    double from = std::max(a[i].first, b[j].first), to = std::min(a[i].second, b[j].second);
    if (from < to) out.emplace_back(from, to);
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return out;
}

// Samples of `spans` trained inside `window`, per process, each span's
// spread evenly over it.
std::vector<int64_t> samples_within(const std::vector<Span>& spans, const Intervals& window, size_t processes) {
  std::vector<double> samples(processes, 0.0);
  for (const Span& span : spans) {
    Intervals overlap = intersection({{span.from, span.to}}, window);
    samples[span.process] += static_cast<double>(span.samples) * length(overlap) / (span.to - span.from);
  }
  std::vector<int64_t> rounded;
  for (double v : samples) rounded.push_back(static_cast<int64_t>(v + 0.5));
  return rounded;
}

}  // namespace

std::optional<TrainingWindow> training_window(const std::vector<std::vector<TimedProgress>>& processes,
                                              double warmup_fraction) {
  if (processes.empty()) return std::nullopt;
  std::vector<Span> spans;
  Intervals active;  // each process from its first write past warm-up to its last
  int64_t all_samples = 0;
  for (const std::vector<TimedProgress>& writes : processes) {
    if (writes.size() < 3) return std::nullopt;
    const double past_warmup = warmup_fraction * static_cast<double>(writes.back().samples);
    size_t first = 1;
    while (first < writes.size() && static_cast<double>(writes[first].samples) < past_warmup) ++first;
    if (first + 1 >= writes.size()) return std::nullopt;
    if (writes.back().unix_s <= writes[first].unix_s) return std::nullopt;
    active.emplace_back(writes[first].unix_s, writes.back().unix_s);
    for (size_t k = first + 1; k < writes.size(); ++k) {
      const TimedProgress& a = writes[k - 1];
      const TimedProgress& b = writes[k];
      double gap = b.unix_s - a.unix_s;
      double trained = b.train_s - a.train_s;
      // A writer whose train_s does not grow says nothing of its gaps: all training.
      if (trained <= 0 || trained > gap) trained = gap;
      all_samples += b.samples - a.samples;
      if (trained > 0) spans.push_back({b.unix_s - trained, b.unix_s, b.samples - a.samples, active.size() - 1});
    }
  }
  Intervals each;
  for (const Span& span : spans) each.emplace_back(span.from, span.to);
  TrainingWindow window;
  window.intervals = merged(each);
  window.seconds = length(window.intervals);
  window.samples = all_samples;
  window.union_intervals = window.intervals;
  window.union_seconds = window.seconds;
  window.process_span_samples.assign(processes.size(), 0);
  window.process_span_s.assign(processes.size(), 0.0);
  for (const Span& span : spans) {
    window.process_span_samples[span.process] += span.samples;
    window.process_span_s[span.process] += span.to - span.from;
  }
  window.process_samples = window.process_span_samples;
  auto [crowded, occupancy] = most_overlapped(active);
  window.occupancy = occupancy;
  Intervals steady = intersection(crowded, window.intervals);
  const double steady_s = length(steady);
  if (steady_s >= kMinFullOccupancySeconds && steady_s >= kMinFullOccupancyShare * window.seconds) {
    window.full_occupancy = true;
    window.process_samples = samples_within(spans, steady, processes.size());
    window.samples = 0;
    for (int64_t n : window.process_samples) window.samples += n;
    window.intervals = std::move(steady);
    window.seconds = steady_s;
  }
  return window;
}

namespace {

// Trapezoid-rule integral of power over [from, to], from the readings that
// carry power (linear between them); 0 when fewer than two do.
double power_integral_j(const std::vector<gpu::DeviceSample>& samples, double from, double to) {
  double joules = 0;
  const gpu::DeviceSample* last = nullptr;
  for (const gpu::DeviceSample& s : samples) {
    if (!s.power_w) continue;
    if (last && s.unix_s > from && last->unix_s < to) {
      double a = std::max(from, last->unix_s), b = std::min(to, s.unix_s);
      auto power_at = [&](double t) {
        double f = (t - last->unix_s) / (s.unix_s - last->unix_s);
        return *last->power_w + f * (*s.power_w - *last->power_w);
      };
      if (b > a) joules += 0.5 * (power_at(a) + power_at(b)) * (b - a);
    }
    last = &s;
  }
  return joules;
}

// The cumulative counter at time t, between the readings that bracket it:
// their difference shared out in proportion to the power sampled between
// them (a counter read once a second, or less often when other samplers
// share the device, would otherwise spread a burst of training evenly over
// the idle time beside it); linearly where no power was sampled. nullopt
// outside the readings.
std::optional<double> counter_at(const std::vector<const gpu::DeviceSample*>& readings,
                                 const std::vector<gpu::DeviceSample>& samples, double t) {
  for (size_t i = 1; i < readings.size(); ++i) {
    const gpu::DeviceSample& a = *readings[i - 1];
    const gpu::DeviceSample& b = *readings[i];
    if (a.unix_s <= t && t <= b.unix_s) {
      double span = b.unix_s - a.unix_s;
      double f = span > 0 ? (t - a.unix_s) / span : 0;
      double whole = power_integral_j(samples, a.unix_s, b.unix_s);
      if (whole > 0) f = power_integral_j(samples, a.unix_s, t) / whole;
      return *a.energy_j + f * (*b.energy_j - *a.energy_j);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> energy_within(const std::vector<std::vector<gpu::DeviceSample>>& devices,
                                    const std::vector<std::pair<double, double>>& intervals) {
  if (devices.empty() || intervals.empty()) return std::nullopt;
  double joules = 0;
  for (const std::vector<gpu::DeviceSample>& samples : devices) {
    std::vector<const gpu::DeviceSample*> readings;
    for (const gpu::DeviceSample& s : samples) {
      if (s.energy_j) readings.push_back(&s);
    }
    for (const auto& [from, to] : intervals) {
      std::optional<double> start = counter_at(readings, samples, from), end = counter_at(readings, samples, to);
      if (!start || !end) return std::nullopt;
      joules += *end - *start;
    }
  }
  return joules;
}

}  // namespace colo::compare
