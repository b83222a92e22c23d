#include "colo/dist/switch_strategy.h"

#include <stdexcept>

namespace colo::dist {

SwitchStrategy::SwitchStrategy(FlatModel& model, FlatOptimizer& optimizer, Communicator& group,
                               Rendezvous& rendezvous, const ClusterSpec& spec, int worker)
    : model_(model), optimizer_(optimizer), rendezvous_(rendezvous), spec_(spec), worker_(worker),
      allreduce_(model, optimizer, group, spec.allreduce), rule_(make_switch_decider(spec.switch_rule)) {}

void SwitchStrategy::begin_step() {
  if (server_) {
    server_->begin_step();
  } else {
    allreduce_.begin_step();
  }
}

ExchangeCost SwitchStrategy::finish_step(int64_t step, double lr) {
  return server_ ? server_->finish_step(step, lr) : allreduce_.finish_step(step, lr);
}

bool SwitchStrategy::observe(const StepObservation& step) {
  if (server_ || !rule_->observe(step)) return false;
  allreduce_.set_enabled(false);
  server_ = std::make_unique<ParamServerStrategy>(model_, optimizer_, rendezvous_, spec_, worker_);
  switched_at_ = step.step;
  return true;
}

std::vector<at::Tensor> SwitchStrategy::run_state() { return server_ ? server_->run_state() : allreduce_.run_state(); }

StrategyState SwitchStrategy::state() const {
  StrategyState state = allreduce_.state();
  state.values["rule"] = rule_->state();
  state.values["switched_at"] = switched_at_;
  return state;
}

void SwitchStrategy::restore(const StrategyState& state) {
  if (server_) throw std::invalid_argument("a switch run restores its state before its first step only");
  if (!state.values.contains("rule")) throw std::invalid_argument("the checkpoint holds no switch rule state");
  allreduce_.restore(state);
  rule_->restore(state.values.at("rule"));
  int64_t switched_at = state.values.value("switched_at", int64_t{-1});
  if (switched_at >= 0) {
    allreduce_.set_enabled(false);
    server_ = std::make_unique<ParamServerStrategy>(model_, optimizer_, rendezvous_, spec_, worker_);
    switched_at_ = switched_at;
  }
}

void SwitchStrategy::finish() {
  if (server_) {
    server_->finish();
  } else {
    release_servers(rendezvous_, spec_, worker_);
  }
}

}  // namespace colo::dist
