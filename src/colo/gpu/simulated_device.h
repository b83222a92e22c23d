#pragma once
// A simulated GPU whose load comes from the jobs placed on it.

#include <map>
#include <mutex>
#include <string>

#include "colo/core/stopwatch.h"
#include "colo/gpu/device.h"

namespace colo::gpu {

struct SimulatedGpuSpec {
  std::string name = "Simulated GPU 80GB";
  int64_t mem_total_bytes = int64_t{80} << 30;
  int sm_count = 132;
  // Power measured on an H100 SXM (bench/results/gpu/power_curve.json):
  // 71 W with no process on it, about 117 W once a job holds a context even
  // at near-zero SM activity, rising linearly (a fitted exponent of 0.9) to
  // about 540 W at SM activity 1.
  double idle_power_w = 71.0;        // no job on the device
  double busy_floor_power_w = 117.0; // a job on it, SM activity 0
  double max_power_w = 540.0;        // at SM activity 1
};

// What one job asks of a simulated GPU when it runs alone there.
struct SimulatedLoad {
  uint32_t pid = 0;
  int64_t mem_bytes = 0;
  double sm_activity = 0.0;     // fraction of the SMs it keeps busy alone, in [0, 1]
};

// How a simulated GPU's time moves.
enum class SimulatedClock {
  kAdvanced,   // only by advance(): virtual time, as the simulator drives it
  kWallClock,  // with the wall clock from construction: a stand-in GPU for
               // `colo monitor`, `colo run` and others outside the simulator
};

// A simulated GPU. Memory adds up; SM activity combines as
// min(1, sum of the jobs' activities) and, past 1, every job slows down by
// the same factor (progress_rate); power is idle without jobs, else
// busy_floor + (max - busy_floor) x activity; energy integrates power over
// the device's time. A sample's time_s is that time (0 at construction);
// its unix_s is the wall clock at construction plus that time, so a device
// that follows the wall clock stamps real times. Thread-safe.
class SimulatedDevice : public Device {
 public:
  SimulatedDevice(int index, SimulatedGpuSpec spec, SimulatedClock clock = SimulatedClock::kAdvanced);

  const DeviceInfo& info() const override { return info_; }
  DeviceSample sample() override;
  std::vector<ProcessUsage> processes() override;

  // Places job `id`; false (and nothing placed) when its memory does not fit
  // in what is free: the job would die of out-of-memory.
  bool place(int64_t id, const SimulatedLoad& load);
  void remove(int64_t id);
  // Changes placed job `id`'s SM activity (a job whose start-up ended);
  // nothing when it is not placed.
  void set_activity(int64_t id, double sm_activity);

  // Fraction of its solo speed each job runs at now: 1 / max(1, sum of activities).
  double progress_rate() const;
  double sm_activity() const;
  double power_w() const;
  int64_t mem_used_bytes() const;

  // Moves virtual time forward by `dt_s`, integrating energy at the current power.
  // Returns the energy used over those dt_s. Only for a kAdvanced device:
  // on one that follows the wall clock it throws std::logic_error.
  double advance(double dt_s);
  SimulatedClock clock() const { return clock_; }
  // Seconds since construction: virtual (kAdvanced) or on the wall clock.
  double now_s() const;
  double energy_j() const;

 private:
  double activity_locked() const;
  double power_locked() const;
  double now_locked() const;
  double energy_locked(double now) const;
  // Integrates energy up to now; called before the power changes.
  void settle_locked();

  SimulatedGpuSpec spec_;
  SimulatedClock clock_;
  double created_unix_s_;
  Stopwatch wall_;
  DeviceInfo info_;
  mutable std::mutex mutex_;
  std::map<int64_t, SimulatedLoad> loads_;
  double now_s_ = 0.0;     // the time energy_j_ is integrated up to
  double energy_j_ = 0.0;
};

// `device` as a SimulatedDevice, or nullptr when it is a real GPU.
inline SimulatedDevice* as_simulated(const DevicePtr& device) { return dynamic_cast<SimulatedDevice*>(device.get()); }

}  // namespace colo::gpu
