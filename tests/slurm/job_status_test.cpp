#include "colo/slurm/job_status.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace colo::slurm {
namespace {

using testing::kGiB;

AttemptRecord attempt(std::string id, std::string state, std::string gpus, double start, double end) {
  AttemptRecord a;
  a.slurm_id = std::move(id);
  a.state = std::move(state);
  a.node = "n1";
  a.gpus = std::move(gpus);
  a.start_unix = start;
  a.end_unix = end;
  return a;
}

TEST(JobStatuses, FollowsARetryToItsLatestAttempt) {
  SubmittedJob first{"10", "train", "shard:4", 4 * kGiB, std::nullopt, 1, "", 0};
  SubmittedJob retry{"11", "train", "shard:5", 5 * kGiB, std::nullopt, 2, "10", 0};
  AttemptRecord died = attempt("10", "OUT_OF_MEMORY", "0", 0, 5);
  died.retried_as = "11";
  died.peak_bytes = 4 * kGiB;
  died.energy_j = 100;
  AttemptRecord ok = attempt("11", "COMPLETED", "0", 6, 9);
  ok.gres = "shard:5";
  ok.mem_bytes = 5 * kGiB;
  ok.peak_bytes = 3 * kGiB;
  ok.energy_j = 50;
  auto rows = job_statuses({first, retry}, {died, ok}, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].first_id, "10");
  EXPECT_EQ(rows[0].job_id, "11");
  EXPECT_EQ(rows[0].state, "COMPLETED");
  EXPECT_EQ(rows[0].oom_retries, 1);
  EXPECT_EQ(rows[0].gres, "shard:5");
  EXPECT_EQ(*rows[0].peak_bytes, 4 * kGiB);
  EXPECT_DOUBLE_EQ(rows[0].energy_j, 150);
}

TEST(JobStatuses, ArrayTasksAreJobsAndTheQueueTellsPendingFromLost) {
  SubmittedJob array{"20", "sweep", "shard:2", 2 * kGiB, std::make_pair(0, 2), 1, "", 0};
  QueueRow pending{"20_1", "20", "sweep", "PENDING", "gres:shard:2", "Resources", "", ""};
  auto rows = job_statuses({array}, {attempt("20_0", "COMPLETED", "1", 0, 1)}, {pending});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "sweep[0]");
  EXPECT_EQ(rows[0].state, "COMPLETED");
  EXPECT_EQ(rows[1].state, "PENDING");
  EXPECT_EQ(rows[1].reason, "Resources");
  EXPECT_EQ(rows[2].state, "LOST");  // neither Slurm nor colo's records know task 2
}

TEST(Summarize, CountsOutcomesRetriesAndOverlapOnEachGpu) {
  std::vector<AttemptRecord> attempts = {attempt("1", "COMPLETED", "0", 0, 10), attempt("2", "COMPLETED", "0", 5, 12),
                                         attempt("3", "OUT_OF_MEMORY", "0", 6, 7),
                                         attempt("4", "COMPLETED", "1", 0, 20),
                                         // ends exactly when 5 starts: not at once
                                         attempt("5", "COMPLETED", "1", 20, 30)};
  std::vector<JobStatus> jobs(3);
  jobs[0].state = "COMPLETED";
  jobs[1].state = "FAILED";
  jobs[2].state = "RUNNING";
  StatusSummary s = summarize(jobs, attempts);
  EXPECT_EQ(s.jobs, 3);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.running, 1);
  EXPECT_EQ(s.oom_requeued, 1);
  EXPECT_EQ(s.max_jobs_per_gpu, 3);
}

}  // namespace
}  // namespace colo::slurm
