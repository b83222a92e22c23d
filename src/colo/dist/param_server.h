#pragma once
// A parameter server: holds one key range of the flat parameters with its
// optimiser state, applies the workers' pushed gradients and answers with
// fresh parameters — synchronously (one averaged update per step, every
// worker answered together), asynchronously (each push applied on arrival),
// or with bounded staleness (each push applied on arrival, but no worker is
// answered while it is more than `staleness` steps ahead of the slowest).

#include <cstdint>
#include <string>

#include "colo/dist/cluster_spec.h"
#include "colo/dist/rendezvous.h"

namespace colo::dist {

// Rendezvous key under which server `index` publishes its address.
std::string server_address_key(int64_t index);

// What a server did, for its log.
struct ServerReport {
  int64_t updates = 0;   // optimiser steps applied
  int64_t pushes = 0;
  double held_s = 0;     // total time replies were held back
};

// Serves key range `index` of `spec.servers` for `spec.workers` workers
// until every worker has said it is done. Waits for worker 0's kInit without
// a time limit (a switch strategy sends it late); after that, a worker that
// disconnects or stays silent for `spec.timeout_s` while others wait on it
// fails the server with a message naming it.
ServerReport run_param_server(const ClusterSpec& spec, Rendezvous& rendezvous, int64_t index);

}  // namespace colo::dist
