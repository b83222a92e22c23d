#include "colo/sched/energy_while_down.h"

#include <algorithm>

namespace colo::sched {

std::map<int64_t, double> split_energy_while_down(double energy_j, double from_unix_s, double to_unix_s,
                                                  const std::vector<UnwatchedRun>& runs) {
  std::map<int64_t, double> split;
  if (!(to_unix_s > from_unix_s) || !(energy_j > 0)) return split;
  auto begin_of = [&](const UnwatchedRun& r) { return std::clamp(r.start_unix_s, from_unix_s, to_unix_s); };
  auto end_of = [&](const UnwatchedRun& r) { return std::clamp(r.end_unix_s.value_or(to_unix_s), from_unix_s, to_unix_s); };
  // The set of runs going on changes only where one begins or ends.
  std::vector<double> edges{from_unix_s, to_unix_s};
  for (const auto& r : runs) {
    edges.push_back(begin_of(r));
    edges.push_back(end_of(r));
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  const double power_w = energy_j / (to_unix_s - from_unix_s);
  for (size_t i = 1; i < edges.size(); ++i) {
    const double a = edges[i - 1], b = edges[i];
    double shares = 0;
    for (const auto& r : runs) {
      if (begin_of(r) <= a && end_of(r) >= b) shares += r.share;
    }
    if (!(shares > 0)) continue;
    for (const auto& r : runs) {
      if (begin_of(r) <= a && end_of(r) >= b) split[r.id] += power_w * (b - a) * r.share / shares;
    }
  }
  return split;
}

}  // namespace colo::sched
