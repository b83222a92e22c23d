// What earlier jobs teach later ones, shared by the runner and the simulator.

#include "colo/sched/job_history.h"

#include <gtest/gtest.h>

namespace colo::sched {
namespace {

TEST(JobHistory, AShareIsFoundByCommandFirstThenByModelUnlessPredictionIsOff) {
  JobHistory history;
  history.learn_share({"train --lr 0.1", "resnet18/b128"}, 0.3);
  EXPECT_EQ(history.share({"train --lr 0.1", ""}), 0.3);
  EXPECT_EQ(history.share({"train --lr 0.01", "resnet18/b128"}), 0.3) << "same model, another command";
  history.learn_share({"train --lr 0.01", "resnet18/b128"}, 0.4);
  EXPECT_EQ(history.share({"train --lr 0.1", "resnet18/b128"}), 0.3) << "its own command's first";
  EXPECT_FALSE(history.share({"other", ""}).has_value());
  JobHistory by_command_only(false);
  by_command_only.learn_share({"train --lr 0.1", "resnet18/b128"}, 0.3);
  EXPECT_FALSE(by_command_only.share({"train --lr 0.01", "resnet18/b128"}).has_value());
}

TEST(JobHistory, AReservationIsTheLargestPeakOfTheCommandPlusATenth) {
  JobHistory history;
  EXPECT_FALSE(history.reservation({"train", "m"}).has_value());
  history.learn_peak({"train", "m"}, 10 << 20);
  history.learn_peak({"train", "m"}, 5 << 20);
  EXPECT_EQ(history.reservation({"train", "m"}), 11 << 20);
  EXPECT_FALSE(history.reservation({"other", "m"}).has_value()) << "peaks are a command's own";
}

TEST(JobHistory, AnAloneRateIsFoundForTheSameModelUnderAnotherCommand) {
  JobHistory history;
  history.learn_alone_rate({"a", "m"}, 1200);
  EXPECT_EQ(history.alone_rate({"b", "m"}), 1200);
  EXPECT_FALSE(history.alone_rate({"b", ""}).has_value());
}

}  // namespace
}  // namespace colo::sched
