// What the runner tells simulated GPUs (colo's demo and tests): the jobs
// placed on them, their activity while paused, and their release. Real GPUs
// show all of it themselves.

#include "colo/gpu/simulated_device.h"
#include "colo/sched/runner.h"

namespace colo::sched {

double Runner::simulated_share(const Active& job) { return job.request.sm_share > 0 ? job.request.sm_share : 0.5; }

void Runner::account_on_simulated(const Active& job) {
  if (!has_gpus_) return;
  for (int g : job.gpus) {
    if (auto* sim = gpu::as_simulated(devices_[g])) {
      sim->place(job.id, {static_cast<uint32_t>(job.pgid), job.request.mem_bytes.value_or(0), simulated_share(job)});
    }
  }
}

void Runner::show_paused_on_simulated(int64_t id, bool paused) {
  if (!has_gpus_) return;
  for (const Active& a : active_) {
    if (a.id != id) continue;
    for (int g : a.gpus) {
      if (auto* sim = gpu::as_simulated(devices_[g])) sim->set_activity(id, paused ? 0.0 : simulated_share(a));
    }
  }
}

int64_t Runner::shows_at_once(const Active& job) const {
  // A simulated GPU shows no process memory: the job counts as active at once.
  return has_gpus_ && gpu::as_simulated(devices_[job.gpus.front()]) != nullptr ? 1 : 0;
}

void Runner::release_on_simulated(const Active& job) {
  if (!has_gpus_) return;
  for (int g : job.gpus) {
    if (auto* sim = gpu::as_simulated(devices_[g])) sim->remove(job.id);
  }
}

}  // namespace colo::sched
