#pragma once
// dist::Strategy: how one worker's gradients become new parameters.

#include <cstdint>
#include <memory>
#include <string>

namespace colo::dist {

// What the exchange of one step cost this worker.
struct ExchangeCost {
  double communication_s = 0;  // sending, receiving and reducing, as this worker saw it
  double waiting_s = 0;        // held back by slower peers (a server's hold, or the collective's straggler)
  int64_t bytes_sent = 0;      // payload this worker put on the wire
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
};

}  // namespace colo::dist
