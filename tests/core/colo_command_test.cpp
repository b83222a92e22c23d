// The spec file a job's colo command names, as an argv or a shell line.

#include "colo/core/colo_command.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(ColoSpecCommand, FindsTrainAndSweepSpecsInAnArgvOrAShellLine) {
  auto train = colo_spec_command({"/opt/bin/colo", "train", "spec.toml", "--out", "runs/a"}, "/jobs");
  ASSERT_TRUE(train);
  EXPECT_EQ(train->subcommand, "train");
  EXPECT_EQ(train->path, "/jobs/spec.toml") << "relative to the workdir";
  EXPECT_EQ(train->after, (std::vector<std::string>{"--out", "runs/a"}));

  auto sweep = colo_spec_command({"/bin/sh", "-c", "cd x && colo sweep /abs/sweep.toml --only 3"}, "/jobs");
  ASSERT_TRUE(sweep);
  EXPECT_EQ(sweep->subcommand, "sweep");
  EXPECT_EQ(sweep->path, "/abs/sweep.toml") << "an absolute path stays";
  EXPECT_EQ(sweep->after, (std::vector<std::string>{"--only", "3"}));
}

TEST(ColoSpecCommand, NoneForOtherCommands) {
  EXPECT_FALSE(colo_spec_command({"python3", "train.py", "cfg.toml"}, "/jobs"));
  EXPECT_FALSE(colo_spec_command({"colo", "estimate", "spec.toml"}, "/jobs"));
  EXPECT_FALSE(colo_spec_command({"colo", "train", "spec.json"}, "/jobs"));
  EXPECT_FALSE(colo_spec_command({"colo", "train"}, "/jobs"));
  EXPECT_FALSE(colo_spec_command({"colo", "train", ".toml"}, "/jobs")) << "a name, not only the suffix";
}

}  // namespace
}  // namespace colo
