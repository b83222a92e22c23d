#pragma once
// A parameter server: holds one key range of the flat parameters with its
// optimiser state, applies the workers' pushed gradients and answers with
// fresh parameters — synchronously (one averaged update per step, every
// worker answered together), asynchronously (each push applied on arrival),
// or with bounded staleness (each push applied on arrival, but no worker is
// answered while it is more than `staleness` steps ahead of the slowest).

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

#include "colo/dist/cluster_spec.h"
#include "colo/dist/rendezvous.h"

namespace colo::dist {

// Rendezvous key under which server `index` publishes its address; a
// restarted server publishes its new one there.
std::string server_address_key(int64_t index);

// Rendezvous key a worker sets before it tells the servers it is done, for
// a server restarted after that to know.
std::string worker_done_key(int64_t worker);

// Rendezvous key worker 0 sets once it has sent every server its kInit
// (a switch run: once it switched).
std::string servers_started_key();

// What a server did, for its log.
struct ServerReport {
  int64_t updates = 0;   // optimiser steps applied
  int64_t pushes = 0;
  double held_s = 0;     // total time replies were held back
  // Sum over pushes of the updates applied between the pull whose
  // parameters the pusher's gradient was computed on (its last; with
  // overlap, the one before) and its push: its gradient's staleness;
  // / pushes = the mean.
  int64_t staleness_sum = 0;
  // Where the server's time went: taking pushes in and launching the
  // optimiser (update_s), and building and sending replies (reply_s: on a
  // GPU the update finishes inside it, when a reply is copied out).
  double update_s = 0;
  double reply_s = 0;
};

// Serves key range `index` of `spec.servers` for `spec.workers` workers
// until every worker has said it is done, holding the range and its
// optimiser state on `device`. Waits for worker 0's kInit without a time
// limit (a switch strategy sends it late); after that, a worker that stays
// silent for `spec.timeout_s` while others wait on it fails the server with
// a message naming it, and so does (within a few seconds) a worker whose
// connection closes before it said it was done. A server whose address is
// already in the rendezvous is a restart (its first process died): it
// counts the workers done that set worker_done_key and, once the servers
// had started (servers_started_key), starts from its range of the run's
// committed checkpoint instead of a kInit; throws InputError naming the
// checkpoint when there is none.
ServerReport run_param_server(const ClusterSpec& spec, Rendezvous& rendezvous, int64_t index, c10::Device device);

}  // namespace colo::dist
