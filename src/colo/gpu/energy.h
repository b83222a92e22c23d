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
// ordered by time), over the samples inside [t0, t1]: the total-energy
// counter's difference between the first and last samples that carry it,
// plus integrated power (trapezoid rule) over the stretches before and after
// them; all integrated power when fewer than two carry the counter. Zero
// when fewer than two samples qualify.
EnergyReading energy_between(const std::vector<DeviceSample>& samples, double t0_s, double t1_s);

// Trapezoid-rule integral of power over all the samples, in joules.
double integrate_power_j(const std::vector<DeviceSample>& samples);

}  // namespace colo::gpu
