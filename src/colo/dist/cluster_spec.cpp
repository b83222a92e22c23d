#include "colo/dist/cluster_spec.h"

#include <algorithm>

#include "colo/core/spec_table.h"
#include "colo/dist/strategy_registry.h"
#include "colo/dist/switch_rule.h"

namespace colo::dist {
namespace {

void parse_rendezvous(const SpecTable& cluster, const std::string& value) {
  if (value.rfind("file://", 0) == 0 && value.size() > 7) return;
  if (value.rfind("tcp://", 0) == 0) {
    auto colon = value.rfind(':');
    if (colon > 6) {
      std::string port = value.substr(colon + 1);
      bool digits = !port.empty() && port.find_first_not_of("0123456789") == std::string::npos;
      if (digits && port.size() <= 5 && std::stoi(port) <= 65535) return;
    }
  }
  cluster.fail("rendezvous", "expected tcp://HOST:PORT (port 0 picks a free one) or file:///PATH, got \"" +
                                 value + "\"");
}

SimulationSpec parse_simulation(const SpecTable& table, int64_t workers) {
  SimulationSpec sim;
  sim.compute_ms_per_sample = table.number_or("compute_ms_per_sample", sim.compute_ms_per_sample, 1e-6, 1e6);
  sim.model_mb = table.number_or("model_mb", sim.model_mb, 0, 1e6);
  sim.server_bandwidth_gbps = table.number_or("server_bandwidth_gbps", sim.server_bandwidth_gbps, 1e-3, 1e6);
  sim.server_latency_us = table.number_or("server_latency_us", sim.server_latency_us, 0, 1e7);
  sim.max_time_s = table.number_or("max_time_s", sim.max_time_s, 1e-3, 1e7);
  sim.eval_every_s = table.number_or("eval_every_s", sim.eval_every_s, 1e-4, 1e6);
  sim.train = table.boolean_or("train", sim.train);
  sim.steps_per_worker = table.integer_or("steps_per_worker", sim.steps_per_worker, 0, 1000000000);
  const auto& known = simulated_strategy_names();
  sim.strategies = table.strings_or("strategies", known);
  if (!sim.train && std::find(sim.strategies.begin(), sim.strategies.end(), "switch") != sim.strategies.end()) {
    table.fail("strategies", "switch needs train = true: its rules read the training loss");
  }
  for (const auto& s : sim.strategies) {
    if (std::find(known.begin(), known.end(), s) == known.end()) {
      std::string names;
      for (const auto& n : known) names += (names.empty() ? "" : ", ") + n;
      table.fail("strategies", "expected names among " + names + ", got " + s);
    }
  }
  for (const auto& w : table.tables("worker")) {
    SimulatedWorker worker;
    worker.speed = w.number_or("speed", worker.speed, 1e-3, 1e3);
    worker.bandwidth_gbps = w.number_or("bandwidth_gbps", worker.bandwidth_gbps, 1e-3, 1e6);
    worker.latency_us = w.number_or("latency_us", worker.latency_us, 0, 1e7);
    w.reject_unknown();
    sim.workers.push_back(worker);
  }
  if (sim.workers.empty()) sim.workers.assign(static_cast<size_t>(workers), SimulatedWorker{});
  table.reject_unknown();
  return sim;
}

}  // namespace

train::OptimizerSpec server_optimizer(const train::OptimizerSpec& optimizer,
                                      const ParamServerOptions& options, int64_t workers) {
  train::OptimizerSpec applied = optimizer;
  if (options.mode != "sync" && options.momentum_compensation && applied.name == "sgd") {
    // Updates in flight: one per worker, two with overlap (its next step
    // computes before its last push is answered).
    double in_flight = static_cast<double>(workers) * (options.overlap ? 2 : 1);
    double implicit = 1.0 - 1.0 / in_flight;
    applied.momentum = std::max(0.0, applied.momentum - implicit);
    if (applied.momentum == 0) applied.nesterov = false;
  }
  return applied;
}

ClusterSpec parse_cluster_spec(const std::string& path) {
  SpecTable root = SpecTable::root(path);
  ClusterSpec spec;
  spec.train = train::parse_train_spec_fields(root);
  auto cluster = root.table("cluster");
  if (!cluster) root.fail("cluster", "missing required table [cluster] (a plain training spec runs with colo train)");
  spec.workers = cluster->integer_or("workers", spec.workers, 1, 1024);
  spec.strategy = cluster->choice_or("strategy", spec.strategy, strategy_names());
  spec.servers = cluster->integer_or("servers", spec.uses_servers() ? 1 : 0, 0, 1024);
  if (spec.uses_servers() && spec.servers < 1) {
    cluster->fail("servers", "strategy \"" + spec.strategy + "\" needs at least 1 server");
  }
  spec.backend = cluster->choice_or("backend", spec.backend, {"auto", "gloo", "nccl"});
  spec.rendezvous = cluster->string_or("rendezvous", spec.rendezvous);
  parse_rendezvous(*cluster, spec.rendezvous);
  spec.timeout_s = cluster->number_or("timeout_s", spec.timeout_s, 1, 86400);
  spec.eval_every = cluster->integer_or("eval_every", spec.eval_every, 0);
  spec.target_accuracy = cluster->number_or("target_accuracy", spec.target_accuracy, 0, 1);
  spec.checkpoint_steps = cluster->integer_or("checkpoint_steps", spec.checkpoint_steps, 0);
  cluster->reject_unknown();

  if (auto t = root.table("allreduce")) {
    spec.allreduce.bucket_mib = t->number_or("bucket_mib", spec.allreduce.bucket_mib, 0.001, 4096);
    spec.allreduce.compression = t->choice_or("compression", spec.allreduce.compression, {"none", "bf16", "fp16"});
    spec.allreduce.topk = t->number_or("topk", spec.allreduce.topk, 0, 1);
    spec.allreduce.overlap = t->boolean_or("overlap", spec.allreduce.overlap);
    spec.allreduce.nccl_channels = t->integer_or("nccl_channels", spec.allreduce.nccl_channels, 0, 64);
    if (spec.allreduce.topk > 0 && spec.allreduce.compression != "none") {
      t->fail("topk", "top-k sparsification sends float32 values; set compression = \"none\"");
    }
    t->reject_unknown();
  }
  if (auto t = root.table("param_server")) {
    spec.param_server.mode = t->choice_or("mode", spec.param_server.mode, {"sync", "async", "ssp"});
    spec.param_server.staleness = t->integer_or("staleness", spec.param_server.staleness, 0, 1000000);
    spec.param_server.momentum_compensation =
        t->boolean_or("momentum_compensation", spec.param_server.momentum_compensation);
    spec.param_server.transport = t->choice_or("transport", spec.param_server.transport, {"auto", "zmq"});
    spec.param_server.rejoin_s = t->number_or("rejoin_s", spec.param_server.rejoin_s, 0, 86400);
    spec.param_server.compression =
        t->choice_or("compression", spec.param_server.compression, {"none", "bf16", "int8"});
    spec.param_server.overlap = t->boolean_or("overlap", spec.param_server.overlap);
    spec.param_server.staleness_lr = t->boolean_or("staleness_lr", spec.param_server.staleness_lr);
    spec.param_server.mps = t->choice_or("mps", spec.param_server.mps, {"auto", "on", "off"});
    if (spec.strategy == "switch") spec.param_server.mode = "async";
    if (spec.param_server.staleness_lr && spec.param_server.mode == "sync") {
      t->fail("staleness_lr", "false with mode = \"sync\" (a synchronous update's gradients are never stale)");
    }
    if (spec.param_server.overlap && spec.param_server.mode != "async") {
      t->fail("overlap", "false unless mode = \"async\" (a synchronous or bounded-staleness reply is what the "
                         "next step waits for)");
    }
    if (spec.param_server.rejoin_s > 0 && spec.param_server.mode == "sync") {
      t->fail("rejoin_s", "0 with mode = \"sync\" (a synchronous round cannot go on with a server restarted from "
                          "an older step; resume the whole run with colo dist --resume)");
    }
    if (spec.param_server.rejoin_s > 0 && spec.checkpoint_steps == 0) {
      t->fail("rejoin_s", "0 without [cluster] checkpoint_steps (a server is restarted from the run's checkpoint)");
    }
    t->reject_unknown();
  }
  if (spec.strategy == "switch") spec.param_server.mode = "async";
  if (auto t = root.table("switch")) {
    spec.switch_rule.min_steps = t->integer_or("min_steps", spec.switch_rule.min_steps, 0);
    spec.switch_rule.window = t->integer_or("window", spec.switch_rule.window, 1, 1000000);
    spec.switch_rule.smoothing = t->number_or("smoothing", spec.switch_rule.smoothing, 0, 0.9999);
    spec.switch_rule.min_improvement = t->number_or("min_improvement", spec.switch_rule.min_improvement, 0, 1);
    spec.switch_rule.name = t->choice_or("rule", spec.switch_rule.name, switch_rule_names());
    spec.switch_rule.fraction = t->number_or("fraction", spec.switch_rule.fraction, 0, 1);
    spec.switch_rule.straggler_ratio = t->number_or("straggler_ratio", spec.switch_rule.straggler_ratio, 1, 1e9);
    spec.switch_rule.straggler_steps = t->integer_or("straggler_steps", spec.switch_rule.straggler_steps, 1, 1000000);
    t->reject_unknown();
  }
  auto simulate = root.table("simulate");
  spec.simulate = simulate ? parse_simulation(*simulate, spec.workers)
                           : SimulationSpec{.workers = std::vector<SimulatedWorker>(
                                                static_cast<size_t>(spec.workers))};
  root.reject_unknown();
  return spec;
}

bool ClusterSpec::uses_servers() const { return strategy_info(strategy).uses_servers; }

}  // namespace colo::dist
