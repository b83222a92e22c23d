#pragma once
// Alpha-beta costs of moving a model's gradients and parameters over a
// simulated cluster's links (time = latency + bytes / bandwidth).

#include <cstdint>
#include <vector>

#include "colo/dist/cluster_spec.h"

namespace colo::dist {

// Seconds to send `bytes` over a link of `gbps` gigabits per second and
// `latency_us` microseconds.
double transfer_s(double bytes, double gbps, double latency_us);

// Ring all-reduce of `bytes` among `workers`: 2 (W-1) rounds, each moving
// bytes / W over the slowest link with the largest latency.
double ring_allreduce_s(double bytes, const std::vector<SimulatedWorker>& workers);

// One worker's push (gradients) or pull (parameters) of `bytes` over its own link.
double worker_transfer_s(double bytes, const SimulatedWorker& worker);

// The servers' share of one push or pull of `bytes` from one worker: the key
// ranges go to `servers` servers in parallel, each over its own link.
double server_transfer_s(double bytes, const SimulationSpec& sim, int64_t servers);

// A synchronous parameter-server exchange: every worker pushes, then pulls;
// each phase lasts as long as the slowest worker link or the servers'
// links carrying all workers' shares, whichever is longer.
double sync_ps_exchange_s(double bytes, const SimulationSpec& sim, int64_t servers);

}  // namespace colo::dist
