#pragma once
// Energy of one device between two instants, from its samples.

#include <vector>

#include "colo/gpu/device.h"

namespace colo::gpu {

struct EnergyReading {
  double energy_j = 0;
  bool from_counter = false;  // true: energy-counter difference; false: integrated power
};

// Energy used between `t0_s` and `t1_s` (monotonic time_s of the samples,
// ordered by time). Uses the total-energy counter when the samples nearest
// both ends carry it, else integrates power with the trapezoid rule over the
// samples inside [t0, t1]. Zero when fewer than two samples qualify.
EnergyReading energy_between(const std::vector<DeviceSample>& samples, double t0_s, double t1_s);

// Trapezoid-rule integral of power over all the samples, in joules.
double integrate_power_j(const std::vector<DeviceSample>& samples);

}  // namespace colo::gpu
