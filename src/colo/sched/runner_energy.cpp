// The runner's energy accounting: each GPU's counter split among the jobs
// on it by their energy shares, stored each round, and the energy a GPU used
// while no scheduler watched split among the jobs that ran then.

#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>

#include "colo/core/files.h"
#include "colo/core/subprocess.h"
#include "colo/sched/energy_while_down.h"
#include "colo/sched/runner.h"

namespace colo::sched {

void Runner::count_energy_while_down(const std::vector<JobRecord>& running) {
  if (!has_gpus_) return;
  std::map<int, GpuEnergyReading> kept;
  for (const auto& r : store_.gpu_energy_readings()) kept[r.gpu] = r;
  const double now = unix_time_s();
  std::vector<GpuEnergyReading> readings;
  std::map<int64_t, double> energy;
  for (size_t g = 0; g < devices_.size(); ++g) {
    const int index = static_cast<int>(g);
    gpu::DeviceSample sample;
    try {
      sample = devices_[g]->sample();
    } catch (const std::exception& e) {
      spdlog::warn("GPU {}: no reading ({}); the energy it used while no scheduler watched is not counted", g, e.what());
      continue;
    }
    last_sample_[index] = sample;
    if (!sample.energy_j) continue;
    const std::string& uuid = devices_[g]->info().uuid;
    readings.push_back({index, uuid, *sample.energy_j, now});
    auto before = kept.find(index);
    if (before == kept.end()) continue;
    if (before->second.uuid != uuid || *sample.energy_j < before->second.counter_j) {
      spdlog::info("GPU {}: its energy counter is not the one last read (another GPU, or the driver reloaded); "
                   "the energy used while no scheduler watched is not counted", g);
      continue;
    }
    std::vector<UnwatchedRun> runs;
    for (const auto& job : running) {
      if (!job.start_s || std::find(job.gpus.begin(), job.gpus.end(), index) == job.gpus.end()) continue;
      UnwatchedRun run{job.id, *job.start_s, std::nullopt, energy_share_for(adopted_request(job).sm_share)};
      if (!(job.pid > 0 && process_alive(job.pid))) {
        run.end_unix_s = file_written_unix_s(status_path(job.id));
        if (!run.end_unix_s) continue;  // lost: when it ended is unknown
      }
      runs.push_back(run);
    }
    const double used_j = *sample.energy_j - before->second.counter_j;
    auto split = split_energy_while_down(used_j, before->second.unix_s, now, runs);
    for (const auto& [id, joules] : split) energy[id] += joules;
    if (!split.empty()) {
      spdlog::info("GPU {}: {:.0f} J used in the {:.0f} s no scheduler watched, split among {} job(s) that ran then",
                   g, used_j, now - before->second.unix_s, split.size());
    }
  }
  store_.add_energy(energy, readings, /*while_down=*/true);
}

void Runner::store_energy(const std::vector<GpuEnergyReading>& readings) {
  if (!has_gpus_ || active_.empty()) return;
  std::map<int64_t, double> energy;
  for (const auto& a : active_) {
    if (a.energy_j > 0) energy[a.id] = a.energy_j;
  }
  store_.add_energy(energy, readings);
  for (auto& a : active_) a.energy_j = 0;
}

void Runner::split_energy(int gpu, double energy_j) {
  double shares = 0;
  for (const auto& a : active_) {
    if (std::find(a.gpus.begin(), a.gpus.end(), gpu) != a.gpus.end()) shares += scheduler_.ledger().energy_share(a.id);
  }
  if (shares <= 0) return;
  for (auto& a : active_) {
    if (std::find(a.gpus.begin(), a.gpus.end(), gpu) != a.gpus.end()) {
      a.energy_j += energy_j * scheduler_.ledger().energy_share(a.id) / shares;
    }
  }
}

}  // namespace colo::sched
