#include "colo/dist/switch_rule.h"

#include <gtest/gtest.h>

namespace colo::dist {
namespace {

TEST(PlateauDetector, FiresWhenTheRawLossStopsImproving) {
  SwitchRule rule;
  rule.min_steps = 0;
  rule.window = 4;
  rule.smoothing = 0;  // raw loss
  rule.min_improvement = 0.1;
  PlateauDetector detector(rule);
  // Steps 1..5 halve the loss; from step 6 on it stays at 1/16.
  std::vector<double> losses{1, 0.5, 0.25, 0.125, 0.0625, 0.0625, 0.0625, 0.0625, 0.0625, 0.0625};
  int fired_at = -1;
  for (size_t i = 0; i < losses.size(); ++i) {
    if (detector.observe(losses[i]) && fired_at < 0) fired_at = static_cast<int>(i) + 1;
  }
  // At step 9 the window is steps 5..9, all 0.0625: improvement 0 < 0.1.
  // At step 8 it is 0.125 -> 0.0625, an improvement of 0.5.
  EXPECT_EQ(fired_at, 9);
}

TEST(PlateauDetector, WaitsForMinStepsAndSmooths) {
  SwitchRule rule;
  rule.min_steps = 20;
  rule.window = 2;
  rule.smoothing = 0.5;
  rule.min_improvement = 0.01;
  PlateauDetector detector(rule);
  for (int i = 1; i < 20; ++i) EXPECT_FALSE(detector.observe(1.0)) << "step " << i;
  EXPECT_TRUE(detector.observe(1.0));
  // EMA with factor 0.5 over losses 1, 0, 0, 0.25 is 1, 0.5, 0.25, 0.25:
  // improvements over one step 0.5, 0.5, then 0, which fires.
  PlateauDetector smooth(SwitchRule{0, 1, 0.5, 0.4});
  EXPECT_FALSE(smooth.observe(1.0));
  EXPECT_FALSE(smooth.observe(0.0));
  EXPECT_DOUBLE_EQ(smooth.last_improvement(), 0.5);
  EXPECT_FALSE(smooth.observe(0.0));
  EXPECT_TRUE(smooth.observe(0.25));
  EXPECT_EQ(smooth.steps(), 4);
}

SwitchRule sync_switch(double fraction, double straggler_ratio, int64_t straggler_steps) {
  SwitchRule rule;
  rule.name = "sync-switch";
  rule.fraction = fraction;
  rule.straggler_ratio = straggler_ratio;
  rule.straggler_steps = straggler_steps;
  return rule;
}

TEST(SyncSwitchRule, FiresOnceItsFractionOfThePlannedStepsIsDone) {
  auto rule = make_switch_decider(sync_switch(0.25, 1.5, 5));
  for (int64_t step = 1; step < 25; ++step) {
    EXPECT_FALSE(rule->observe({step, 100, 1.0, 0.010, 0.010})) << "step " << step;
  }
  EXPECT_TRUE(rule->observe({25, 100, 1.0, 0.010, 0.010}));
  EXPECT_NE(rule->reason().find("25 of 100 planned steps"), std::string::npos) << rule->reason();
  EXPECT_TRUE(rule->observe({26, 100, 1.0, 0.010, 0.010}));  // stays fired
}

TEST(SyncSwitchRule, APersistentStragglerSwitchesEarlyAndABlipDoesNot) {
  auto rule = make_switch_decider(sync_switch(0.5, 1.5, 3));
  EXPECT_FALSE(rule->observe({1, 1000, 1.0, 0.030, 0.010}));
  EXPECT_FALSE(rule->observe({2, 1000, 1.0, 0.030, 0.010}));
  EXPECT_FALSE(rule->observe({3, 1000, 1.0, 0.012, 0.010}));  // caught up: the count starts over
  EXPECT_FALSE(rule->observe({4, 1000, 1.0, 0.016, 0.010}));
  EXPECT_FALSE(rule->observe({5, 1000, 1.0, 0.020, 0.010}));
  EXPECT_TRUE(rule->observe({6, 1000, 1.0, 0.015, 0.010}));   // 1.5x counts: three in a row
  EXPECT_NE(rule->reason().find("straggler"), std::string::npos) << rule->reason();
}

TEST(SwitchRules, RegistryNamesEachRuleOnceAndRefusesAnUnknownOne) {
  EXPECT_EQ(switch_rule_names(), (std::vector<std::string>{"plateau", "sync-switch"}));
  for (const auto& name : switch_rule_names()) {
    SwitchRule rule;
    rule.name = name;
    auto decider = make_switch_decider(rule);
    EXPECT_FALSE(decider->observe({1, 1000, 1.0, 0.01, 0.01})) << name;
    EXPECT_EQ(decider->reason(), "") << name;
  }
  SwitchRule unknown;
  unknown.name = "gut-feeling";
  EXPECT_THROW(make_switch_decider(unknown), std::invalid_argument);
}

TEST(SwitchRules, PlateauRuleSaysWhyItFired) {
  SwitchRule rule;
  rule.min_steps = 0;
  rule.window = 1;
  rule.smoothing = 0;
  auto decider = make_switch_decider(rule);
  EXPECT_FALSE(decider->observe({1, 100, 1.0, 0.01, 0.01}));
  EXPECT_TRUE(decider->observe({2, 100, 1.0, 0.01, 0.01}));
  EXPECT_NE(decider->reason().find("loss plateaued"), std::string::npos) << decider->reason();
}

}  // namespace
}  // namespace colo::dist
