#include "colo/slurm/job_meter.h"

#include <spdlog/spdlog.h>

#include "colo/core/subprocess.h"
#include "colo/gpu/energy.h"

namespace colo::slurm {

JobMeter::JobMeter(std::vector<gpu::DevicePtr> devices, pid_t process_group) : process_group_(process_group) {
  for (auto& d : devices) devices_.push_back({std::move(d), std::nullopt, false});
}

double JobMeter::energy_share(int64_t own_bytes, int64_t all_bytes, int processes, int own_processes) {
  if (all_bytes > 0) return static_cast<double>(own_bytes) / static_cast<double>(all_bytes);
  if (processes == 0) return 1.0;
  return static_cast<double>(own_processes) / static_cast<double>(processes);
}

void JobMeter::sample() {
  for (auto& d : devices_) {
    try {
      gpu::DeviceSample now = d.device->sample();
      int64_t own = 0, all = 0;
      int processes = 0, own_processes = 0;
      for (const auto& p : d.device->processes()) {
        ++processes;
        all += p.used_mem_bytes;
        if (belongs_to_job(p.pid, static_cast<uint32_t>(process_group_))) {
          ++own_processes;
          own += p.used_mem_bytes;
        }
      }
      peak_ = std::max(peak_, own);  // per GPU, as a job's `mem` is
      if (own_processes > 0) peak_seen_ = true;
      if (d.last) {
        double joules = gpu::energy_between({*d.last, now}, d.last->time_s, now.time_s).energy_j;
        energy_ += joules * energy_share(own, all, processes, own_processes);
        energy_seen_ = true;
      }
      d.last = now;
    } catch (const std::exception& e) {
      if (!d.warned) spdlog::warn("colo slurm: GPU {} does not answer ({}); its energy is missing", d.device->info().index, e.what());
      d.warned = true;
      d.last.reset();
    }
  }
}

std::optional<int64_t> JobMeter::peak_bytes() const {
  return peak_seen_ ? std::optional<int64_t>(peak_) : std::nullopt;
}

std::optional<double> JobMeter::energy_j() const {
  return energy_seen_ ? std::optional<double>(energy_) : std::nullopt;
}

}  // namespace colo::slurm
