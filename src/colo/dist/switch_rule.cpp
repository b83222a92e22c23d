#include "colo/dist/switch_rule.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace colo::dist {
namespace {

class PlateauRule : public SwitchDecider {
 public:
  explicit PlateauRule(const SwitchRule& rule) : rule_(rule), detector_(rule) {}
  bool observe(const StepObservation& step) override { return detector_.observe(step.mean_loss); }
  nlohmann::json state() const override { return detector_.state(); }
  void restore(const nlohmann::json& state) override { detector_.restore(state); }
  std::string reason() const override {
    if (!detector_.fired()) return "";
    char text[160];
    std::snprintf(text, sizeof(text), "loss plateaued (smoothed improvement %.4f, below %.3f over %lld steps)",
                  detector_.last_improvement(), rule_.min_improvement, static_cast<long long>(rule_.window));
    return text;
  }

 private:
  SwitchRule rule_;
  PlateauDetector detector_;
};

}  // namespace

namespace {

struct RegisteredRule {
  const char* name;
  std::unique_ptr<SwitchDecider> (*make)(const SwitchRule&);
};

template <typename Rule>
std::unique_ptr<SwitchDecider> make_rule(const SwitchRule& rule) {
  return std::make_unique<Rule>(rule);
}

const RegisteredRule kRules[] = {
    {"plateau", make_rule<PlateauRule>},
    {"sync-switch", make_rule<SyncSwitchRule>},
};

}  // namespace

const std::vector<std::string>& switch_rule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& r : kRules) all.emplace_back(r.name);
    return all;
  }();
  return names;
}

std::unique_ptr<SwitchDecider> make_switch_decider(const SwitchRule& rule) {
  for (const auto& r : kRules) {
    if (rule.name == r.name) return r.make(rule);
  }
  throw std::invalid_argument("unknown switch rule \"" + rule.name + "\"");
}

bool PlateauDetector::observe(double loss) {
  if (fired_) return true;
  ema_ = steps_ == 0 ? loss : rule_.smoothing * ema_ + (1 - rule_.smoothing) * loss;
  ++steps_;
  smoothed_.push_back(ema_);
  if (static_cast<int64_t>(smoothed_.size()) > rule_.window + 1) smoothed_.pop_front();
  if (static_cast<int64_t>(smoothed_.size()) <= rule_.window) return false;
  double before = smoothed_.front();
  improvement_ = before != 0 ? (before - ema_) / std::fabs(before) : 0;
  if (steps_ >= rule_.min_steps && improvement_ < rule_.min_improvement) fired_ = true;
  return fired_;
}

nlohmann::json PlateauDetector::state() const {
  return {{"smoothed", std::vector<double>(smoothed_.begin(), smoothed_.end())},
          {"ema", ema_},
          {"steps", steps_},
          {"improvement", improvement_},
          {"fired", fired_}};
}

void PlateauDetector::restore(const nlohmann::json& state) {
  auto smoothed = state.at("smoothed").get<std::vector<double>>();
  smoothed_.assign(smoothed.begin(), smoothed.end());
  ema_ = state.at("ema").get<double>();
  steps_ = state.at("steps").get<int64_t>();
  improvement_ = state.at("improvement").get<double>();
  fired_ = state.at("fired").get<bool>();
}

nlohmann::json SyncSwitchRule::state() const { return {{"lagging_steps", lagging_steps_}, {"reason", reason_}}; }

void SyncSwitchRule::restore(const nlohmann::json& state) {
  lagging_steps_ = state.at("lagging_steps").get<int64_t>();
  reason_ = state.at("reason").get<std::string>();
}

bool SyncSwitchRule::observe(const StepObservation& step) {
  if (!reason_.empty()) return true;
  bool lagging = step.fastest_compute_s > 0 && step.slowest_compute_s >= rule_.straggler_ratio * step.fastest_compute_s;
  lagging_steps_ = lagging ? lagging_steps_ + 1 : 0;
  char text[160];
  if (lagging_steps_ >= rule_.straggler_steps) {
    std::snprintf(text, sizeof(text), "a straggler: the slowest worker computed %.2fx as long as the fastest for %lld steps",
                  step.slowest_compute_s / step.fastest_compute_s, static_cast<long long>(lagging_steps_));
    reason_ = text;
  } else if (step.planned_steps > 0 &&
             static_cast<double>(step.step) >= rule_.fraction * static_cast<double>(step.planned_steps)) {
    std::snprintf(text, sizeof(text), "%lld of %lld planned steps (fraction %.3f) done synchronously",
                  static_cast<long long>(step.step), static_cast<long long>(step.planned_steps), rule_.fraction);
    reason_ = text;
  }
  return !reason_.empty();
}

}  // namespace colo::dist
