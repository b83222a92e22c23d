#pragma once
// Background sampling of every device into a ring buffer and a file.

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/gpu/device.h"

namespace colo::gpu {

struct SamplerOptions {
  double interval_s = 1.0;    // at least 0.1
  size_t capacity = 36000;    // samples kept per device (oldest dropped)
  std::string out_path;       // "" = none; *.csv = CSV, else JSON Lines
};

// Samples every device every interval on one background thread, from
// start() until stop() (or destruction). Readers may call samples() at any
// time from any thread. The file gets one line per device per tick and is
// flushed each tick, so it survives a crash up to the last tick.
class Sampler {
 public:
  // Throws std::invalid_argument for an interval under 0.1 s and
  // std::runtime_error when the output file cannot be opened.
  Sampler(std::vector<DevicePtr> devices, SamplerOptions options);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();
  void stop();

  // Samples of the device at position `position` in the list, oldest first.
  std::vector<DeviceSample> samples(size_t position) const;
  // Blocks until every device has a sample with an energy reading taken at
  // or after `unix_s`, or `max_wait_s` has passed; says which. Energy
  // counters are read less often than other figures (NVML's once a second,
  // shared by every sampler of the device object), so a window's end needs
  // this wait to be bracketed by readings.
  bool wait_for_energy_after(double unix_s, double max_wait_s) const;
  size_t ticks() const { return ticks_.load(); }
  // CPU time the sampling thread used so far (user + system), in seconds.
  double thread_cpu_s() const { return thread_cpu_s_.load(); }

 private:
  void run();
  void write(const DeviceSample& s);

  std::vector<DevicePtr> devices_;
  SamplerOptions options_;
  std::FILE* file_ = nullptr;
  bool csv_ = false;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  mutable std::condition_variable ticked_;
  bool stopping_ = false;
  std::vector<std::deque<DeviceSample>> rings_;
  std::thread thread_;
  std::atomic<size_t> ticks_{0};
  std::atomic<double> thread_cpu_s_{0};
};

// A sample as JSON: every reading it has (missing ones are left out).
nlohmann::json sample_to_json(const DeviceSample& s);

// One-line CSV header and row for a sample (also used by `colo monitor`).
std::string sample_csv_header();
std::string sample_csv_row(const DeviceSample& s);

}  // namespace colo::gpu
