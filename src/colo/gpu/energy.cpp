#include "colo/gpu/energy.h"

#include <algorithm>

namespace colo::gpu {

double integrate_power_j(const std::vector<DeviceSample>& samples) {
  double energy = 0;
  for (size_t i = 1; i < samples.size(); ++i) {
    const auto& a = samples[i - 1];
    const auto& b = samples[i];
    if (a.power_w && b.power_w) energy += 0.5 * (*a.power_w + *b.power_w) * (b.time_s - a.time_s);
  }
  return energy;
}

EnergyReading energy_between(const std::vector<DeviceSample>& samples, double t0_s, double t1_s) {
  std::vector<DeviceSample> inside;
  for (const auto& s : samples) {
    if (s.time_s >= t0_s && s.time_s <= t1_s) inside.push_back(s);
  }
  if (inside.size() < 2) return {};
  size_t first = inside.size(), last = 0;
  for (size_t i = 0; i < inside.size(); ++i) {
    if (inside[i].energy_j) {
      first = std::min(first, i);
      last = i;
    }
  }
  if (first >= last) return {integrate_power_j(inside), false};
  std::vector<DeviceSample> head(inside.begin(), inside.begin() + first + 1);
  std::vector<DeviceSample> tail(inside.begin() + last, inside.end());
  double counted = *inside[last].energy_j - *inside[first].energy_j;
  return {integrate_power_j(head) + counted + integrate_power_j(tail), true};
}

}  // namespace colo::gpu
