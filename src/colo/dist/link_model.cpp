#include "colo/dist/link_model.h"

#include <algorithm>

namespace colo::dist {

double transfer_s(double bytes, double gbps, double latency_us) {
  return latency_us * 1e-6 + bytes * 8 / (gbps * 1e9);
}

double ring_allreduce_s(double bytes, const std::vector<SimulatedWorker>& workers) {
  double world = static_cast<double>(workers.size());
  if (workers.size() < 2) return 0;
  double slowest_gbps = workers.front().bandwidth_gbps, worst_latency = 0;
  for (const auto& w : workers) {
    slowest_gbps = std::min(slowest_gbps, w.bandwidth_gbps);
    worst_latency = std::max(worst_latency, w.latency_us);
  }
  return 2 * (world - 1) * transfer_s(bytes / world, slowest_gbps, worst_latency);
}

double worker_transfer_s(double bytes, const SimulatedWorker& worker) {
  return transfer_s(bytes, worker.bandwidth_gbps, worker.latency_us);
}

double server_transfer_s(double bytes, const SimulationSpec& sim, int64_t servers) {
  return transfer_s(bytes / static_cast<double>(servers), sim.server_bandwidth_gbps, sim.server_latency_us);
}

double sync_ps_exchange_s(double bytes, const SimulationSpec& sim, int64_t servers) {
  double slowest_worker = 0;
  for (const auto& w : sim.workers) slowest_worker = std::max(slowest_worker, worker_transfer_s(bytes, w));
  double all_shares = static_cast<double>(sim.workers.size()) * bytes / static_cast<double>(servers);
  double server_link = transfer_s(all_shares, sim.server_bandwidth_gbps, sim.server_latency_us);
  return 2 * std::max(slowest_worker, server_link);
}

}  // namespace colo::dist
