#pragma once
// The worker side of the parameter server: after backward, push this
// worker's gradients to every server (each its key range) and pull back the
// parameters the servers answer with. Sync, async or SSP is the servers'
// mode; the worker code is the same. A server on this host with its range on
// a GPU hands out shared device buffers, and the ranges move device to
// device; any other server gets them through the transport, via host memory,
// as float32 or, with compression, bfloat16 or 8-bit codes (int8_codec.h,
// the pushes with error feedback). With overlap (async), the
// reply to a push is taken at the next step instead of waited for.
// With `rejoin_s`, a server that closed its connection is waited for: once
// it is back (restarted from the checkpoint, at a new address), the worker
// connects again, takes its range's parameters and goes on; the step's push
// to it is lost.

#include <memory>
#include <vector>

#include "colo/dist/cluster_spec.h"
#include "colo/dist/flat_model.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/rendezvous.h"
#include "colo/dist/strategy.h"
#include "colo/dist/ps_transport.h"

namespace colo::dist {

class ParamServerStrategy : public Strategy {
 public:
  // Connects to every server and waits for the first parameters. Worker 0
  // first sends each server its key range of the current parameters and of
  // `optimizer`'s state (so a switch continues where all-reduce left off).
  ParamServerStrategy(FlatModel& model, const FlatOptimizer& optimizer, Rendezvous& rendezvous,
                      const ClusterSpec& spec, int worker);
  ~ParamServerStrategy() override;

  std::string name() const override { return "ps-" + mode_; }
  void begin_step() override;
  ExchangeCost finish_step(int64_t step, double lr) override;
  bool synchronous() const override { return mode_ == "sync"; }
  void finish() override;
  // Worker 0 asks every server for its key range's parameters and
  // optimiser state (kSnapshot) and puts them together, on the CPU.
  std::vector<at::Tensor> run_state() override;

 private:
  // A server's key range and, where it shares device memory, the
  // gradient inbox and parameter outbox this worker maps.
  struct ServerEnd {
    std::string address;
    ServerLink link;
    int64_t begin = 0, end = 0;
    at::Tensor inbox, outbox;  // undefined: through the transport
    at::Tensor packed_out, packed_in;  // int8: this range's push and reply, packed, on the CPU
  };

  // Links to server `s` at its address in the rendezvous, says hello and
  // maps the buffers its welcome names.
  ServerEnd connect(int64_t s);
  // Receives every server's kParams into the model; returns the longest hold.
  double pull();
  // Overlap: pulls the reply to the last push, which the worker has not
  // waited for; returns the longest hold.
  double take_outstanding_reply();
  // Receives server `s`'s kParams into the model, rejoining it first if it
  // closed; returns its hold.
  double pull_from(size_t s);
  // Waits up to rejoin_s for server `s` to publish a new address, then
  // connects to it (its answer to the hello is left to pull_from). Rethrows
  // `lost` when rejoining is off or the server does not come back.
  void rejoin(size_t s, const ServerClosed& lost);

  FlatModel& model_;
  Rendezvous& rendezvous_;
  const ClusterSpec& spec_;
  int moments_;  // [P] buffers of the workers' optimiser (FlatOptimizer::moment_buffers)
  std::string mode_;
  int worker_;
  double timeout_s_;
  bool compressed_;  // payloads through the transport as bfloat16
  bool int8_;        // payloads through the transport as 8-bit codes (int8_codec.h)
  bool overlap_;     // the reply to a push is taken at the next step
  std::vector<ServerEnd> servers_;
  at::Tensor host_values_;     // [P] on the CPU, received into (bfloat16 with compression; unused with int8)
  at::Tensor host_gradients_;  // [P] on the CPU, sent from (bfloat16 with compression; unused with int8)
  at::Tensor residual_;        // int8: [P] on the model's device, what the pushes' codes missed so far
  bool awaiting_reply_ = false;
  // This step's exchange by phase: receive_s (waiting for and reading the
  // servers' replies), apply_s (putting them into the model), to_host_s
  // (the gradients into the inboxes or the host buffer), send_s (handing
  // the pushes to ZeroMQ).
  std::map<std::string, double> phases_s_;
  bool finished_ = false;
};

// Tells every server that `worker` is done without ever having pushed (a
// switch run that never switched).
void release_servers(Rendezvous& rendezvous, const ClusterSpec& spec, int worker);

}  // namespace colo::dist
