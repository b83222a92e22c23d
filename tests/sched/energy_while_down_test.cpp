#include "colo/sched/energy_while_down.h"

#include <gtest/gtest.h>

namespace colo::sched {
namespace {

TEST(EnergyWhileDown, AJobAloneThroughoutGetsAllOfIt) {
  auto split = split_energy_while_down(1000, 100, 200, {{7, 50, std::nullopt, 0.5}});
  ASSERT_EQ(split.size(), 1u);
  EXPECT_DOUBLE_EQ(split.at(7), 1000);
}

TEST(EnergyWhileDown, JobsSideBySideSplitItByTheirShares) {
  auto split = split_energy_while_down(1000, 100, 200, {{1, 0, std::nullopt, 0.1}, {2, 0, std::nullopt, 0.3}});
  EXPECT_DOUBLE_EQ(split.at(1), 250);
  EXPECT_DOUBLE_EQ(split.at(2), 750);
}

TEST(EnergyWhileDown, EachJobGetsOnlyTheTimeItRanAndTheTimeNoneRanGoesToNoJob) {
  // Job 1 alone until it ends at 125; nothing runs until job 2 starts at
  // 150; then job 2 alone. Power is taken as constant: 10 W.
  auto split = split_energy_while_down(1000, 100, 200, {{1, 90, 125.0, 0.5}, {2, 150, std::nullopt, 1.0}});
  EXPECT_DOUBLE_EQ(split.at(1), 250);
  EXPECT_DOUBLE_EQ(split.at(2), 500);
}

TEST(EnergyWhileDown, RunsOutsideTheIntervalOrAnEmptyIntervalGetNothing) {
  EXPECT_TRUE(split_energy_while_down(1000, 100, 200, {{1, 10, 90.0, 0.5}}).empty());
  EXPECT_TRUE(split_energy_while_down(1000, 100, 100, {{1, 10, std::nullopt, 0.5}}).empty());
  EXPECT_TRUE(split_energy_while_down(0, 100, 200, {{1, 10, std::nullopt, 0.5}}).empty());
}

}  // namespace
}  // namespace colo::sched
