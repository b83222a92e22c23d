#include "colo/slurm/batch_script.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace colo::slurm {
namespace {

using testing::kGiB;

SubmitOptions options() {
  SubmitOptions o;
  o.colo_path = "/opt/colo/bin/colo";
  o.state_dir = "/shared/state";
  o.shard_bytes = kGiB;
  o.shards_per_gpu = 80;
  return o;
}

TEST(GresRequest, KnownMemoryAsksForShardsUnknownOrSeveralGpusForWholeGpus) {
  EXPECT_EQ(gres_request(1, 6 * kGiB + 5, options()).gres, "shard:7");
  EXPECT_EQ(gres_request(1, std::nullopt, options()).gres, "gpu:1");
  EXPECT_EQ(gres_request(2, 6 * kGiB, options()).gres, "gpu:2");
}

TEST(GresRequest, MoreThanOneGpuHoldsIsRefused) {
  try {
    gres_request(1, 81 * kGiB, options());
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("81 shards"), std::string::npos) << e.what();
  }
}

TEST(BatchJob, ScriptAsksForShardsAndRunsTheJobUnderColoSlurmExec) {
  sched::JobSpec spec;
  spec.name = "lr sweep";
  spec.command = {"python3", "train.py", "--lr", "0.1; rm -rf /"};
  spec.workdir = "/home/u/proj";
  spec.env = {{"SEED", "7"}};
  spec.mem_bytes = 6 * kGiB;
  spec.array = std::make_pair(0, 15);
  BatchJob job = plan_batch_job(spec, options());
  EXPECT_EQ(job.request.shards, 6);
  const std::string& s = job.script;
  EXPECT_EQ(s.rfind("#!/bin/sh\n", 0), 0u);
  EXPECT_NE(s.find("#SBATCH --job-name='lr sweep'\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --gres=shard:6\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --array=0-15\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --chdir=/home/u/proj\n"), std::string::npos);
  EXPECT_NE(s.find("/shared/state/logs/%x-%A_%a.out"), std::string::npos);
  EXPECT_NE(s.find("export SEED=7\n"), std::string::npos);
  EXPECT_NE(s.find("export COLO_ARRAY_INDEX=\"$SLURM_ARRAY_TASK_ID\"\n"), std::string::npos);
  EXPECT_NE(s.find("exec /opt/colo/bin/colo slurm exec --state /shared/state --name 'lr sweep' --gpus 1 --mem " +
                   std::to_string(6 * kGiB)),
            std::string::npos);
  EXPECT_NE(s.find("-- python3 train.py --lr '0.1; rm -rf /'\n"), std::string::npos);
}

TEST(BatchJob, ATooLargeJobIsNamedInTheRefusal) {
  sched::JobSpec spec;
  spec.name = "huge";
  spec.command = {"true"};
  spec.mem_bytes = 100 * kGiB;
  try {
    plan_batch_job(spec, options());
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job huge: needs 100.0 GiB", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace colo::slurm
