#include "colo/slurm/slurm_client.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace colo::slurm {
namespace {

TEST(ParseQueue, ReadsEachFieldAndSkipsShortLines) {
  auto rows = parse_queue("12_3|12|sweep|RUNNING|gres:shard:7|node1|node1|colo: attempt 1\n"
                          "13|13|big|PENDING|gres:gpu:1|Resources||\n"
                          "garbage line\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].job_id, "12_3");
  EXPECT_EQ(rows[0].array_job_id, "12");
  EXPECT_EQ(rows[0].gres, "gres:shard:7");
  EXPECT_EQ(rows[0].comment, "colo: attempt 1");
  EXPECT_EQ(rows[1].state, "PENDING");
  EXPECT_EQ(rows[1].reason, "Resources");
  EXPECT_EQ(rows[1].comment, "");
}

TEST(ParseSbatchId, TakesTheIdLineEvenAfterWarnings) {
  EXPECT_EQ(parse_sbatch_id("42\n"), "42");
  EXPECT_EQ(parse_sbatch_id("42;cluster\n"), "42");
  EXPECT_EQ(parse_sbatch_id("sbatch: warning: something\n43\n"), "43");
  EXPECT_THROW(parse_sbatch_id("sbatch: error: Batch job submission failed\n"), SlurmError);
}

TEST(SlurmClient, AMissingProgramIsAClearError) {
  // run_process reports an exec failure as exit 127 or a throw; either way a SlurmError.
  SlurmClient client(5.0);
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);
  EXPECT_THROW(client.queue(), SlurmError);
  setenv("PATH", path.c_str(), 1);
}

}  // namespace
}  // namespace colo::slurm
