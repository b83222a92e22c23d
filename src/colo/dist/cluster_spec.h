#pragma once
// A cluster file (`colo dist cluster.toml`): a training spec plus how many
// workers and servers train it and with which data-parallel strategy.

#include <cstdint>
#include <string>
#include <vector>

#include "colo/train/train_spec.h"

namespace colo::dist {

// [allreduce]: synchronous gradient averaging.
struct AllreduceOptions {
  double bucket_mib = 25;            // gradient bucket size; buckets reduce while backward runs
  std::string compression = "none";  // none | bf16 | fp16: wire type of the gradients
  double topk = 0;                   // fraction of each bucket's entries sent (0 = dense), with error feedback
  bool overlap = true;               // reduce buckets while backward runs (false: all after backward)
  int64_t nccl_channels = 0;         // NCCL: at most this many channels (SMs) per collective (0 = NCCL's choice)
};

// [param_server]: servers hold key ranges of the parameters and apply the optimiser.
struct ParamServerOptions {
  std::string mode = "async";  // sync | async | ssp (switch always uses async)
  int64_t staleness = 2;       // ssp: a worker may run this many steps ahead of the slowest
  // async/ssp with SGD: the servers lower the momentum by the momentum that
  // asynchrony itself adds, 1 - 1/workers (Mitliagkas et al., "Asynchrony
  // begets momentum", 2016): max(0, momentum - (1 - 1/workers)).
  bool momentum_compensation = true;
  // auto: a worker on a server's host, both on CUDA devices, pushes and pulls
  // through shared device memory (CUDA IPC), every other pair through
  // ZeroMQ via host memory; zmq: every pair through ZeroMQ.
  std::string transport = "auto";
  // none | bf16 | int8: the ranges that travel through ZeroMQ and host memory go
  // as bfloat16, half the bytes: a push carries the gradients rounded, a
  // reply what to add to the parameters the worker holds (the server keeps
  // the worker's copy, so rounding never accumulates: each reply also
  // carries what the last one's rounding left out). The first reply to a
  // worker is float32. Shared device memory always carries float32.
  // int8: the same as 8-bit codes with a scale per 4096 values (int8_codec.h),
  // a quarter of the bytes; each worker keeps what its pushes' codes missed
  // and adds it to its next push (error feedback).
  std::string compression = "none";
  // async only: a worker does not wait for the reply to its push; it takes
  // it at the next step, so sending, the server's update and the reply
  // overlap its computation. Its own gradient then reaches its parameters
  // one step later; momentum compensation counts each worker twice.
  bool overlap = false;
  // async/ssp: a push whose gradient is `staleness` > 1 updates old (the
  // server applied that many since the pusher last pulled) is applied with
  // lr / staleness (Zhang et al., "Staleness-aware Async-SGD", 2016), so a
  // slow worker's old gradients move the parameters less.
  bool staleness_lr = false;
  // Seconds a worker waits for a server whose connection closed to come
  // back, restarted from the run's last checkpoint (by `colo dist`'s
  // launcher; under srun, by whoever starts its rank again), before the run
  // fails; 0: it fails at once. async and ssp only, with checkpoint_steps.
  double rejoin_s = 0;
  // auto: `colo dist` runs its ranks under a private MPS daemon when the
  // servers share GPUs with the workers (dist/run_mps.h); on: the same, and
  // a run that cannot is an error; off: time slices.
  std::string mps = "auto";
};

// The optimiser a parameter server applies: the spec's, with momentum
// compensation in the asynchronous modes.
train::OptimizerSpec server_optimizer(const train::OptimizerSpec& optimizer,
                                      const ParamServerOptions& options, int64_t workers);

// [switch]: the rule that moves a run from allreduce to async PS (switch_rule.h).
struct SwitchRule {
  // plateau (colo's):
  int64_t min_steps = 100;       // never switch before this many steps
  int64_t window = 50;           // steps over which improvement is measured
  double smoothing = 0.9;        // EMA factor of the loss (0 = raw loss)
  double min_improvement = 0.02; // switch when the smoothed loss fell by less than this fraction over `window`
  std::string name = "plateau";  // plateau | sync-switch
  // sync-switch (Li et al., ICDCS 2021):
  double fraction = 0.125;       // switch once this fraction of the planned steps is done
  double straggler_ratio = 1.5;  // ... or once the slowest worker's compute is this many times the fastest's
  int64_t straggler_steps = 20;  //     for this many steps in a row
};

// One simulated worker (`colo dist simulate`).
struct SimulatedWorker {
  double speed = 1.0;            // relative speed: step compute time = base / speed
  double bandwidth_gbps = 10.0;  // link bandwidth, gigabits per second
  double latency_us = 50.0;      // link latency (alpha)
};

// [simulate]: the cluster `colo dist simulate` models.
struct SimulationSpec {
  double compute_ms_per_sample = 0.05;  // a speed-1 worker's compute time per training sample
  double model_mb = 0;                  // bytes on the wire per push/pull, in MB (0 = the model's float32 size)
  double server_bandwidth_gbps = 10.0;  // each server's link
  double server_latency_us = 50.0;
  double max_time_s = 120;              // simulated time budget per strategy
  double eval_every_s = 1.0;            // simulated seconds between evaluations
  // Each worker stops after this many steps, as a real run's workers stop
  // after their shard's planned steps (a fast async worker then ends first
  // and the slow one pushes alone); 0 = every worker runs to max_time_s.
  int64_t steps_per_worker = 0;
  // false: time only (step time, throughput, staleness), no gradient is
  // computed and no accuracy reported: how many workers cost nothing but
  // their timing. The switch strategy reads the loss and needs training.
  bool train = true;
  std::vector<std::string> strategies{};  // empty: all (strategy_registry.h, simulated_strategy_names)
  std::vector<SimulatedWorker> workers;  // [[simulate.worker]]; empty = `workers` copies of the default
};

struct ClusterSpec {
  train::TrainSpec train;   // batch_size is per worker
  int64_t workers = 2;
  int64_t servers = 0;      // param_server and switch need at least 1
  std::string strategy = "allreduce";  // a name of strategy_registry.h
  std::string backend = "auto";        // auto | gloo | nccl
  std::string rendezvous = "tcp://127.0.0.1:0";  // tcp://HOST:PORT (0 = a free port) or file:///PATH
  double timeout_s = 60;    // a collective or message that takes longer fails the run
  int64_t eval_every = 0;   // steps between test evaluations on rank 0; 0 = at the end of each epoch
  double target_accuracy = 0;  // time-to-accuracy is reported against this (0 = not reported)
  // Steps between checkpoints (run_checkpoint.h); 0 = none. In an
  // asynchronous phase a checkpoint waits for every worker to reach its step.
  int64_t checkpoint_steps = 0;
  bool resume = false;      // `colo dist --resume`: continue from the committed checkpoint (not a file key)
  AllreduceOptions allreduce;
  ParamServerOptions param_server;
  SwitchRule switch_rule;
  SimulationSpec simulate;

  // Whether the strategy needs parameter-server processes (strategy_registry.h).
  bool uses_servers() const;
  int64_t world() const { return workers + (uses_servers() ? servers : 0); }
};

// Reads and validates a cluster file; throws InputError naming the file, the
// field and what was expected.
ClusterSpec parse_cluster_spec(const std::string& path);

}  // namespace colo::dist
