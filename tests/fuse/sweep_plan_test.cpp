// The sweep plan shared by `colo sweep` and colo.fuse.sweep: grid order and
// cap, reproducible random draws, and who survives a halving rung.

#include <gtest/gtest.h>

#include "colo/fuse/sweep_plan.h"

namespace colo::fuse {
namespace {

SweepAxis axis(const std::string& name, std::vector<nlohmann::json> values) {
  SweepAxis a;
  a.name = name;
  a.values = std::move(values);
  return a;
}

TEST(SweepPlan, GridTakesTheFirstAxisSlowestAndStopsAtCount) {
  std::vector<SweepAxis> axes{axis("lr", {0.1, 0.01}), axis("seed", {0, 1, 2})};
  auto all = expand_axes(axes, "grid", 0, 0);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0], (nlohmann::json{{"lr", 0.1}, {"seed", 0}}));
  EXPECT_EQ(all[3], (nlohmann::json{{"lr", 0.01}, {"seed", 0}}));
  EXPECT_EQ(expand_axes(axes, "grid", 4, 0).size(), 4u);
}

TEST(SweepPlan, RandomDrawsStayInRangeAndRepeatWithTheSeed) {
  SweepAxis lr;
  lr.name = "lr";
  lr.range = true;
  lr.min = 1e-4;
  lr.max = 1e-1;
  lr.log = true;
  std::vector<SweepAxis> axes{lr, axis("optimizer", {"sgd", "adam"})};
  auto draws = expand_axes(axes, "random", 50, 7);
  ASSERT_EQ(draws.size(), 50u);
  for (const auto& d : draws) {
    EXPECT_GE(d["lr"].get<double>(), 1e-4);
    EXPECT_LE(d["lr"].get<double>(), 1e-1);
  }
  EXPECT_EQ(draws, expand_axes(axes, "random", 50, 7));
  EXPECT_NE(draws, expand_axes(axes, "random", 50, 8));
}

TEST(SweepPlan, HalvingKeepsTheBestFractionRoundedUpInTheirOrder) {
  EXPECT_EQ(halving_survivors({0.5, 0.9, 0.1, 0.7, 0.3}, 0.5), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(halving_survivors({0.2, 0.2, 0.2}, 0.34), (std::vector<int64_t>{0, 1}));  // ties: earlier first
  EXPECT_EQ(halving_survivors({0.4, 0.8}, 0.1), (std::vector<int64_t>{1}));          // at least one
  Halving h;
  h.rungs = {1, 3};
  EXPECT_TRUE(is_rung(h, 3));
  EXPECT_FALSE(is_rung(h, 2));
}

}  // namespace
}  // namespace colo::fuse
