#pragma once
// Strategy-Switch: all-reduce until the switch rule fires (switch_rule.h),
// then the asynchronous parameter server from the same parameters and
// optimiser state, in the same processes, without a restart.

#include <memory>

#include "colo/dist/allreduce_strategy.h"
#include "colo/dist/param_server_strategy.h"
#include "colo/dist/switch_rule.h"

namespace colo::dist {

class SwitchStrategy : public Strategy {
 public:
  SwitchStrategy(FlatModel& model, FlatOptimizer& optimizer, Communicator& group,
                 Rendezvous& rendezvous, const ClusterSpec& spec, int worker);

  std::string name() const override { return server_ ? server_->name() : "allreduce"; }
  void begin_step() override;
  ExchangeCost finish_step(int64_t step, double lr) override;
  bool synchronous() const override { return !server_; }
  void finish() override;
  // The phase's: the all-reduce's, or the servers' once it has switched.
  std::vector<at::Tensor> run_state() override;
  // The all-reduce's state, the rule's history and the step it switched
  // after; restoring a switched state switches at once (the servers start
  // from the restored parameters).
  StrategyState state() const override;
  void restore(const StrategyState& state) override;

  // Feeds what every worker saw of the step (identical on every worker,
  // so they all switch after the same step). Returns true on the step the
  // switch happens.
  bool observe(const StepObservation& step);
  // Why the rule fired; empty before.
  std::string switch_reason() const { return rule_->reason(); }
  // The step after which the run switched; -1 while still all-reducing.
  int64_t switched_at() const { return switched_at_; }

 private:
  FlatModel& model_;
  FlatOptimizer& optimizer_;
  Rendezvous& rendezvous_;
  const ClusterSpec& spec_;
  int worker_;
  AllreduceStrategy allreduce_;
  std::unique_ptr<SwitchDecider> rule_;
  std::unique_ptr<ParamServerStrategy> server_;
  int64_t switched_at_ = -1;
};

}  // namespace colo::dist
