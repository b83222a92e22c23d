#include "colo/sched/job_name.h"

#include <gtest/gtest.h>

namespace colo::sched {
namespace {

TEST(JobName, AnInterpreterIsNamedAfterItsScriptWithoutExtension) {
  EXPECT_EQ(default_job_name({"python3", "train.py", "--lr", "0.1"}), "train");
  EXPECT_EQ(default_job_name({"python", "-u", "/home/u/exp/train.py"}), "train");
  EXPECT_EQ(default_job_name({"/usr/bin/python3.11", "-W", "ignore", "-X", "dev", "fit.model.py"}), "fit.model");
  EXPECT_EQ(default_job_name({"bash", "run.sh"}), "run");
  EXPECT_EQ(default_job_name({"zsh", "-eo", "pipefail", "scripts/sweep.zsh", "3"}), "sweep");
}

TEST(JobName, PythonDashMIsNamedAfterTheModule) {
  EXPECT_EQ(default_job_name({"python3", "-m", "colo.examples.mnist", "--epochs", "2"}), "colo.examples.mnist");
  EXPECT_EQ(default_job_name({"python3", "-um", "trainer"}), "trainer");
  EXPECT_EQ(default_job_name({"python3", "-mtrainer"}), "trainer");
}

TEST(JobName, LaunchersAreNamedAfterWhatTheyRun) {
  EXPECT_EQ(default_job_name({"/usr/bin/env", "python3", "x.py"}), "x");
  EXPECT_EQ(default_job_name({"env", "-u", "DISPLAY", "CUDA_VISIBLE_DEVICES=0", "SEED=3", "python3", "-u", "train.py"}),
            "train");
  EXPECT_EQ(default_job_name({"nice", "-n", "10", "python3", "train.py"}), "train");
  EXPECT_EQ(default_job_name({"taskset", "-c", "0-3", "./run_all.sh"}), "run_all");
  EXPECT_EQ(default_job_name({"taskset", "0x3", "bash", "run.sh"}), "run");
  EXPECT_EQ(default_job_name({"srun", "-n", "4", "--gres", "gpu:1", "--exclusive", "python", "train.py"}), "train");
  EXPECT_EQ(default_job_name({"srun", "--ntasks=2", "-N2", "./a.out"}), "a");
  EXPECT_EQ(default_job_name({"torchrun", "--nproc_per_node", "2", "--standalone", "train.py", "--model", "vit"}),
            "train");
  EXPECT_EQ(default_job_name({"torchrun", "--nnodes=1", "-m", "pkg.train"}), "pkg.train");
  EXPECT_EQ(default_job_name({"env", "OMP_NUM_THREADS=4", "nice", "torchrun", "--nproc-per-node", "8", "ddp.py"}), "ddp");
}

TEST(JobName, AShellCommandStringNamesItsJob) {
  EXPECT_EQ(default_job_name({"/bin/sh", "-c", "sleep 1; echo done"}), "sleep 1; echo done");
  EXPECT_EQ(default_job_name({"bash", "-lc", "python3 train.py"}), "python3 train.py");
  EXPECT_EQ(default_job_name({"sh", "-c", std::string(60, 'x')}), std::string(40, 'x'));
}

TEST(JobName, OtherCommandsAndLaunchersWithNothingToRunKeepTheProgram) {
  EXPECT_EQ(default_job_name({"true"}), "true");
  EXPECT_EQ(default_job_name({"./train.sh", "--epochs", "3"}), "./train.sh");
  EXPECT_EQ(default_job_name({"colo", "train", "examples/lenet.toml"}), "colo");
  EXPECT_EQ(default_job_name({"python3", "-c", "import torch"}), "python3");
  EXPECT_EQ(default_job_name({"python3"}), "python3");
  EXPECT_EQ(default_job_name({"python3", "-"}), "python3");
  EXPECT_EQ(default_job_name({"env", "A=1"}), "env");
  EXPECT_EQ(default_job_name({"srun", "--pty", "bash"}), "bash");
  EXPECT_EQ(default_job_name({"python-config", "--libs"}), "python-config") << "not an interpreter";
  EXPECT_EQ(default_job_name({}), "");
}

}  // namespace
}  // namespace colo::sched
