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

}  // namespace
}  // namespace colo::dist
