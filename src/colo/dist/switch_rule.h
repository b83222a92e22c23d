#pragma once
// When a switch strategy leaves all-reduce for the asynchronous parameter
// server. Rules are registered by name ([switch] rule):
//
// plateau (colo's, the default): once the training loss has settled. The
// loss is smoothed with an exponential moving average; the rule fires at the
// first step n >= max(min_steps, window) where the smoothed loss fell by
// less than `min_improvement` (a fraction) over the last `window` steps:
//     (s[n - window] - s[n]) / |s[n - window]| < min_improvement.
// In the spirit of Strategy-Switch (Provatas et al., 2025): synchronous
// updates while the loss still drops fast, asynchronous ones once the model
// has stabilised.
//
// sync-switch (Li et al., "Sync-Switch", ICDCS 2021): synchronous for a
// fixed fraction of the planned steps, found offline (its experiments: 1/8
// matched BSP's accuracy for ResNet-50 on CIFAR-100, 1/20 for ResNet-32 on
// CIFAR-10), then asynchronous; and its straggler policy, which leaves
// synchronous training while a worker lags: here once the slowest worker's
// compute time stays `straggler_ratio` times the fastest's for
// `straggler_steps` steps in a row. colo's switch is one way, so a straggler
// switches the run for good.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/dist/cluster_spec.h"

namespace colo::dist {

// What a rule sees after each synchronous step; the same on every worker
// (the loss and compute times are gathered from all of them), so every
// worker switches after the same step.
struct StepObservation {
  int64_t step = 0;               // steps done, this one included
  int64_t planned_steps = 0;      // steps the run takes in all
  double mean_loss = 0;           // the step's loss averaged over the workers
  double slowest_compute_s = 0;   // the step's compute time on the slowest worker
  double fastest_compute_s = 0;   // ... and on the fastest
};

class SwitchDecider {
 public:
  virtual ~SwitchDecider() = default;
  // Feeds the next step; true from the step the rule fires on.
  virtual bool observe(const StepObservation& step) = 0;
  // Why it fired, for the log; empty before.
  virtual std::string reason() const = 0;
  // What the rule remembers of the steps it has seen, for a checkpoint;
  // restore() makes a fresh rule of the same spec continue as this one.
  virtual nlohmann::json state() const = 0;
  // Throws nlohmann::json::exception when `state` lacks a field.
  virtual void restore(const nlohmann::json& state) = 0;
};

// The rule `rule.name` names; std::invalid_argument for an unknown name.
std::unique_ptr<SwitchDecider> make_switch_decider(const SwitchRule& rule);
// Every registered rule name.
const std::vector<std::string>& switch_rule_names();

// The plateau rule on the loss alone.
class PlateauDetector {
 public:
  explicit PlateauDetector(const SwitchRule& rule) : rule_(rule) {}
  // Feeds the loss of the next step; true from the step the rule fires on.
  bool observe(double loss);
  bool fired() const { return fired_; }
  int64_t steps() const { return steps_; }
  // The relative improvement over the window at the last step (0 before a full window).
  double last_improvement() const { return improvement_; }
  // What observe() remembers, and its inverse (SwitchDecider::state).
  nlohmann::json state() const;
  void restore(const nlohmann::json& state);

 private:
  SwitchRule rule_;
  std::deque<double> smoothed_;  // the last window + 1 smoothed values
  double ema_ = 0;
  int64_t steps_ = 0;
  double improvement_ = 0;
  bool fired_ = false;
};

// Sync-Switch's timing and straggler policies.
class SyncSwitchRule : public SwitchDecider {
 public:
  explicit SyncSwitchRule(const SwitchRule& rule) : rule_(rule) {}
  bool observe(const StepObservation& step) override;
  std::string reason() const override { return reason_; }
  nlohmann::json state() const override;
  void restore(const nlohmann::json& state) override;

 private:
  SwitchRule rule_;
  int64_t lagging_steps_ = 0;
  std::string reason_;
};

}  // namespace colo::dist
