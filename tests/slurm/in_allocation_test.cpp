#include "colo/slurm/in_allocation.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/slurm/job_meter.h"
#include "support/bytes.h"

namespace colo::slurm {
namespace {

using testing::kGiB;

ExecOptions options(const std::string& recovery) {
  ExecOptions o;
  o.shard_bytes = kGiB;
  o.shards_per_gpu = 80;
  o.recovery = recovery;
  return o;
}

TEST(RetryMemory, PeakMarginGrowsFromTheLimitItDiedAt) {
  // Died at its 10 GiB limit with a sampled peak below it: 10 GiB x 1.1.
  auto first = retry_memory(options("peak-margin"), 1, 10 * kGiB, 9 * kGiB);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, 11 * kGiB);
  // Second retry: a 20% margin over the larger observed peak.
  auto second = retry_memory(options("peak-margin"), 2, 11 * kGiB, 12 * kGiB);
  ASSERT_TRUE(second);
  EXPECT_NEAR(static_cast<double>(*second), 14.4 * kGiB, 1.0);
}

TEST(RetryMemory, AloneOrOutgrowingOneGpuAsksForAWholeGpu) {
  EXPECT_FALSE(retry_memory(options("alone"), 1, 10 * kGiB, std::nullopt));
  EXPECT_FALSE(retry_memory(options("peak-margin"), 1, 75 * kGiB, std::nullopt));  // 82.5 GiB > 80 shards
  EXPECT_FALSE(retry_memory(options("peak-margin"), 1, std::nullopt, 3 * kGiB));   // it already had a whole GPU
  EXPECT_THROW(retry_memory(options("bogus"), 1, kGiB, std::nullopt), std::invalid_argument);
}

TEST(AllocationEnv, ReadsSlurmsAndColosVariables) {
  setenv("SLURM_JOB_ID", "57", 1);
  setenv("SLURM_ARRAY_JOB_ID", "50", 1);
  setenv("SLURM_ARRAY_TASK_ID", "7", 1);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  setenv("COLO_SLURM_ATTEMPT", "2", 1);
  setenv("COLO_SLURM_RETRY_OF", "50_7", 1);
  setenv("COLO_SLURM_MEM", "12884901888", 1);
  AllocationEnv a = allocation_from_environment();
  EXPECT_EQ(a.job_id, "50_7");
  EXPECT_EQ(a.array_task, "7");
  EXPECT_EQ(a.gpus, "1");
  EXPECT_EQ(a.attempt, 2);
  EXPECT_EQ(a.retry_of, "50_7");
  EXPECT_EQ(*a.mem_override, 12 * kGiB);
  setenv("COLO_SLURM_MEM", "whole", 1);
  EXPECT_EQ(*allocation_from_environment().mem_override, 0);
  setenv("COLO_SLURM_ATTEMPT", "two", 1);
  EXPECT_THROW(allocation_from_environment(), InputError);
  for (const char* name : {"SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "COLO_SLURM_ATTEMPT",
                           "COLO_SLURM_RETRY_OF", "COLO_SLURM_MEM", "CUDA_VISIBLE_DEVICES"}) {
    unsetenv(name);
  }
  EXPECT_THROW(allocation_from_environment(), InputError);  // not inside an allocation
}

TEST(JobMeter, EnergyShareFollowsMemoryHeld) {
  EXPECT_DOUBLE_EQ(JobMeter::energy_share(3 * kGiB, 12 * kGiB, 3, 1), 0.25);
  EXPECT_DOUBLE_EQ(JobMeter::energy_share(0, 0, 0, 0), 1.0);      // nothing on the GPU but its own start-up
  EXPECT_DOUBLE_EQ(JobMeter::energy_share(0, 0, 4, 1), 0.25);     // no memory reported: by process count
}

}  // namespace
}  // namespace colo::slurm
