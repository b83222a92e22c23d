#include "colo/gpu/simulated_device.h"

#include <algorithm>
#include <stdexcept>

namespace colo::gpu {

SimulatedDevice::SimulatedDevice(int index, SimulatedGpuSpec spec, SimulatedClock clock)
    : spec_(std::move(spec)), clock_(clock), created_unix_s_(unix_time_s()) {
  info_.index = index;
  info_.name = spec_.name;
  info_.uuid = "GPU-SIM-" + std::to_string(index);
  info_.mem_total_bytes = spec_.mem_total_bytes;
  info_.sm_count = spec_.sm_count;
  info_.gpm_supported = true;
}

double SimulatedDevice::activity_locked() const {
  double sum = 0;
  for (const auto& [id, load] : loads_) sum += load.sm_activity;
  return std::min(1.0, sum);
}

double SimulatedDevice::power_locked() const {
  if (loads_.empty()) return spec_.idle_power_w;
  return spec_.busy_floor_power_w + (spec_.max_power_w - spec_.busy_floor_power_w) * activity_locked();
}

double SimulatedDevice::now_locked() const {
  return clock_ == SimulatedClock::kWallClock ? std::max(now_s_, wall_.elapsed_s()) : now_s_;
}

double SimulatedDevice::energy_locked(double now) const { return energy_j_ + power_locked() * (now - now_s_); }

void SimulatedDevice::settle_locked() {
  const double now = now_locked();
  energy_j_ = energy_locked(now);
  now_s_ = now;
}

int64_t SimulatedDevice::mem_used_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t used = 0;
  for (const auto& [id, load] : loads_) used += load.mem_bytes;
  return used;
}

bool SimulatedDevice::place(int64_t id, const SimulatedLoad& load) {
  int64_t used = mem_used_bytes();
  std::lock_guard<std::mutex> lock(mutex_);
  if (used + load.mem_bytes > spec_.mem_total_bytes) return false;
  settle_locked();
  loads_[id] = load;
  return true;
}

void SimulatedDevice::remove(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  settle_locked();
  loads_.erase(id);
}

void SimulatedDevice::set_activity(int64_t id, double sm_activity) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = loads_.find(id);
  if (it == loads_.end()) return;
  settle_locked();
  it->second.sm_activity = sm_activity;
}

double SimulatedDevice::progress_rate() const {
  std::lock_guard<std::mutex> lock(mutex_);
  double sum = 0;
  for (const auto& [id, load] : loads_) sum += load.sm_activity;
  return 1.0 / std::max(1.0, sum);
}

double SimulatedDevice::sm_activity() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return activity_locked();
}

double SimulatedDevice::power_w() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return power_locked();
}

double SimulatedDevice::advance(double dt_s) {
  if (clock_ == SimulatedClock::kWallClock) {
    throw std::logic_error("advance() on simulated GPU " + std::to_string(info_.index) + ", which follows the wall clock");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  double used = power_locked() * dt_s;
  energy_j_ += used;
  now_s_ += dt_s;
  return used;
}

double SimulatedDevice::now_s() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return now_locked();
}

double SimulatedDevice::energy_j() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return energy_locked(now_locked());
}

DeviceSample SimulatedDevice::sample() {
  int64_t used = mem_used_bytes();
  std::lock_guard<std::mutex> lock(mutex_);
  const double now = now_locked();
  DeviceSample s;
  s.index = info_.index;
  s.time_s = now;
  s.unix_s = created_unix_s_ + now;
  s.mem_total_bytes = spec_.mem_total_bytes;
  s.mem_used_bytes = used;
  s.mem_free_bytes = spec_.mem_total_bytes - used;
  s.sm_active = activity_locked();
  s.gpu_util = loads_.empty() ? 0.0 : 1.0;
  s.power_w = power_locked();
  s.energy_j = energy_locked(now);
  return s;
}

std::vector<ProcessUsage> SimulatedDevice::processes() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ProcessUsage> out;
  for (const auto& [id, load] : loads_) out.push_back({load.pid, load.mem_bytes});
  return out;
}

}  // namespace colo::gpu
