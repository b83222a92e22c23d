#include "colo/gpu/sampler.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace colo::gpu {
namespace {

std::string optional_cell(const std::optional<double>& value) {
  if (!value) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", *value);
  return buffer;
}

}  // namespace

nlohmann::json sample_to_json(const DeviceSample& s) {
  nlohmann::json j = {{"unix_s", s.unix_s}, {"time_s", s.time_s}, {"index", s.index},
                      {"mem_used_bytes", s.mem_used_bytes}, {"mem_total_bytes", s.mem_total_bytes}};
  auto put = [&](const char* key, const std::optional<double>& v) {
    if (v) j[key] = *v;
  };
  put("gpu_util", s.gpu_util);
  put("mem_util", s.mem_util);
  put("sm_active", s.sm_active);
  put("sm_occupancy", s.sm_occupancy);
  put("power_w", s.power_w);
  put("energy_j", s.energy_j);
  return j;
}

namespace {

double thread_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace

std::string sample_csv_header() {
  return "unix_s,time_s,index,mem_used_bytes,mem_total_bytes,gpu_util,mem_util,sm_active,"
         "sm_occupancy,power_w,energy_j";
}

std::string sample_csv_row(const DeviceSample& s) {
  char head[128];
  std::snprintf(head, sizeof head, "%.3f,%.4f,%d,%lld,%lld", s.unix_s, s.time_s, s.index,
                static_cast<long long>(s.mem_used_bytes), static_cast<long long>(s.mem_total_bytes));
  return std::string(head) + "," + optional_cell(s.gpu_util) + "," + optional_cell(s.mem_util) + "," +
         optional_cell(s.sm_active) + "," + optional_cell(s.sm_occupancy) + "," +
         optional_cell(s.power_w) + "," + optional_cell(s.energy_j);
}

Sampler::Sampler(std::vector<DevicePtr> devices, SamplerOptions options)
    : devices_(std::move(devices)), options_(std::move(options)), rings_(devices_.size()) {
  if (!(options_.interval_s >= 0.1)) {
    throw std::invalid_argument("sampling interval must be at least 0.1 s");
  }
  if (!options_.out_path.empty()) {
    file_ = std::fopen(options_.out_path.c_str(), "w");
    if (file_ == nullptr) {
      throw std::runtime_error("cannot open " + options_.out_path + ": " + std::strerror(errno));
    }
    csv_ = options_.out_path.size() >= 4 &&
           options_.out_path.compare(options_.out_path.size() - 4, 4, ".csv") == 0;
    if (csv_) std::fprintf(file_, "%s\n", sample_csv_header().c_str());
  }
}

Sampler::~Sampler() {
  stop();
  if (file_ != nullptr) std::fclose(file_);
}

void Sampler::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void Sampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Sampler::write(const DeviceSample& s) {
  if (file_ == nullptr) return;
  std::string line = csv_ ? sample_csv_row(s) : sample_to_json(s).dump();
  std::fprintf(file_, "%s\n", line.c_str());
}

void Sampler::run() {
  auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.interval_s));
  auto next = std::chrono::steady_clock::now();
  while (true) {
    std::vector<DeviceSample> tick;
    for (auto& device : devices_) tick.push_back(device->sample());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = 0; i < tick.size(); ++i) {
        rings_[i].push_back(tick[i]);
        if (rings_[i].size() > options_.capacity) rings_[i].pop_front();
        write(tick[i]);
      }
      if (file_ != nullptr) std::fflush(file_);
    }
    ticked_.notify_all();
    ++ticks_;
    thread_cpu_s_.store(thread_cpu_seconds());
    next += interval;
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_until(lock, next, [this] { return stopping_; })) break;
    // After a stall (a slow driver call), skip missed ticks instead of bursting.
    auto now = std::chrono::steady_clock::now();
    if (now > next + interval) next = now;
  }
}

std::vector<DeviceSample> Sampler::samples(size_t position) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {rings_.at(position).begin(), rings_.at(position).end()};
}

bool Sampler::wait_for_energy_after(double unix_s, double max_wait_s) const {
  auto has_reading = [&] {
    for (const std::deque<DeviceSample>& ring : rings_) {
      bool found = std::any_of(ring.rbegin(), ring.rend(),
                               [&](const DeviceSample& s) { return s.energy_j && s.unix_s >= unix_s; });
      if (!found) return false;
    }
    return true;
  };
  std::unique_lock<std::mutex> lock(mutex_);
  return ticked_.wait_for(lock, std::chrono::duration<double>(max_wait_s), has_reading);
}

}  // namespace colo::gpu
