#pragma once
// dist::Strategy: how one worker's gradients become new parameters.

#include <cstdint>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

namespace colo::dist {

// What the exchange of one step cost this worker.
struct ExchangeCost {
  double communication_s = 0;  // sending, receiving and reducing, as this worker saw it
  double waiting_s = 0;        // held back by slower peers (a server's hold, or the collective's straggler)
  int64_t bytes_sent = 0;      // payload this worker put on the wire
  // Where the exchange's time went, by phase (seconds, within the two
  // above), for strategies that time theirs; empty for the others.
  std::map<std::string, double> phases_s;
};

// What a strategy carries from step to step besides the parameters and the
// optimiser's state (top-k residuals, a switch rule's history), for a
// checkpoint.
struct StrategyState {
  std::vector<at::Tensor> tensors;
  nlohmann::json values = nlohmann::json::object();
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // "allreduce", "ps-sync", "ps-async", "ps-ssp"; a switch reports its current phase.
  virtual std::string name() const = 0;
  // Before the forward pass of a step.
  virtual void begin_step() = 0;
  // After backward: exchanges this worker's gradients and leaves the new
  // parameters in the model, updated with learning rate `lr`.
  virtual ExchangeCost finish_step(int64_t step, double lr) = 0;
  // Whether every worker takes its steps in lockstep (their losses can be
  // averaged every step without slowing anyone down).
  virtual bool synchronous() const = 0;
  // After the last step: releases servers and peers.
  virtual void finish() {}
  // The run's parameters, then its optimiser's state tensors
  // (FlatOptimizer::state() order), as a checkpoint holds them. Worker 0
  // alone calls it, after every worker has finished the same step and
  // before any starts the next. All-reduce: this worker's own (the workers
  // are replicas); a parameter server: fetched from its servers.
  virtual std::vector<at::Tensor> run_state() = 0;
  // The strategy's own state, for a checkpoint; restore() makes a fresh
  // strategy of the same spec, on a model and optimiser that hold the
  // checkpoint's run_state(), continue from it. Throws
  // std::invalid_argument for a state that does not fit this strategy.
  virtual StrategyState state() const { return {}; }
  virtual void restore(const StrategyState& state) { (void)state; }
};

}  // namespace colo::dist
