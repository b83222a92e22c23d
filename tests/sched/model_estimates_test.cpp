// Estimates of [job.model] tables in the background, once per table, kept
// in a real SQLite store across runs.

#include "colo/sched/model_estimates.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/temp_dir.h"

namespace colo::sched {
namespace {

JobSpec model_job(const std::string& builder, int64_t batch = 32) {
  JobSpec spec;
  spec.name = builder;
  spec.command = {"python3", "train.py"};
  spec.workdir = "/work";
  estimate::PythonModelSource model;
  model.builder = builder;
  model.input = {3, 224, 224};
  model.batch_size = batch;
  model.optimizer = "sgd";
  spec.model = model;
  return spec;
}

// Looks `job` up until its estimate is no longer pending (at most 10 s).
ModelEstimates::Answer wait_for(ModelEstimates& estimates, const JobSpec& job) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    ModelEstimates::Answer answer = estimates.lookup(job);
    if (answer.status != ModelEstimates::Status::kPending || std::chrono::steady_clock::now() > deadline) return answer;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(ModelEstimates, IdenticalTablesAreEstimatedOnceAndLaterRunsOnTheStoreAskNothing) {
  testing::TempDir dir;
  std::atomic<int> calls{0};
  {
    JobStore store(dir.file("jobs.db"));
    ModelEstimates estimates(store, [&](const JobSpec& job) {
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return ModelEstimate{job.model->batch_size * int64_t{1000}, "fake of " + job.model->builder};
    }, 4);
    JobSpec a = model_job("models:resnet18"), same = model_job("models:resnet18");
    same.name = "another name, same table";
    same.command = {"python3", "train.py", "--lr", "0.1"};
    EXPECT_EQ(estimates.lookup(a).status, ModelEstimates::Status::kPending);
    EXPECT_EQ(estimates.lookup(same).status, ModelEstimates::Status::kPending);
    ModelEstimates::Answer answer = wait_for(estimates, same);
    ASSERT_EQ(answer.status, ModelEstimates::Status::kKnown);
    EXPECT_EQ(answer.bytes, 32000);
    EXPECT_EQ(wait_for(estimates, a).bytes, 32000);
    EXPECT_EQ(calls.load(), 1) << "one estimate for two jobs of one table";
    EXPECT_EQ(wait_for(estimates, model_job("models:resnet18", 64)).bytes, 64000) << "another batch, another table";
    EXPECT_EQ(calls.load(), 2);
  }
  JobStore reopened(dir.file("jobs.db"));
  ModelEstimates later(reopened, [&](const JobSpec&) -> ModelEstimate {
    ADD_FAILURE() << "a table estimated in an earlier run is estimated again";
    return {};
  }, 1);
  ModelEstimates::Answer answer = later.lookup(model_job("models:resnet18"));
  EXPECT_EQ(answer.status, ModelEstimates::Status::kKnown) << "at once, from the store";
  EXPECT_EQ(answer.bytes, 32000);
  EXPECT_EQ(answer.reason, "fake of models:resnet18");
}

// A store keeps answers by what made them: after colo is rebuilt or
// upgraded (another version), its tables are estimated again; an answer that
// ran out of time is not kept for later runs.
TEST(ModelEstimates, AnotherEstimatorVersionEstimatesAgainAndATimedOutAnswerIsNotKept) {
  testing::TempDir dir;
  std::atomic<int> calls{0};
  auto counted = [&](const JobSpec&) {
    ++calls;
    return ModelEstimate{int64_t{1000}, "fake"};
  };
  JobSpec job = model_job("models:resnet18");
  {
    JobStore store(dir.file("jobs.db"));
    ModelEstimates old_colo(store, counted, 1, "estimator 1");
    EXPECT_EQ(wait_for(old_colo, job).bytes, 1000);
  }
  JobStore store(dir.file("jobs.db"));
  {
    ModelEstimates same(store, counted, 1, "estimator 1");
    EXPECT_EQ(wait_for(same, job).status, ModelEstimates::Status::kKnown);
    EXPECT_EQ(calls.load(), 1) << "the same version answers from the store";
    ModelEstimates rebuilt(store, counted, 1, "estimator 2");
    EXPECT_EQ(wait_for(rebuilt, job).bytes, 1000);
    EXPECT_EQ(calls.load(), 2) << "another version estimates again";
  }
  std::atomic<int> slow_calls{0};
  auto slow = [&](const JobSpec&) {
    ++slow_calls;
    return ModelEstimate{std::nullopt, "estimating it took over the time limit", true};
  };
  JobSpec other = model_job("models:vit", 8);
  {
    ModelEstimates loaded(store, slow, 1, "estimator 2");
    ModelEstimates::Answer answer = wait_for(loaded, other);
    EXPECT_EQ(answer.status, ModelEstimates::Status::kUnknown);
    EXPECT_EQ(answer.reason, "estimating it took over the time limit");
    EXPECT_EQ(loaded.lookup(other).status, ModelEstimates::Status::kUnknown) << "not asked again in this run";
    EXPECT_EQ(slow_calls.load(), 1);
  }
  ModelEstimates next_run(store, counted, 1, "estimator 2");
  EXPECT_EQ(wait_for(next_run, other).status, ModelEstimates::Status::kKnown) << "a later run asks again";
}

TEST(ModelEstimates, AColoTrainSpecIsEstimatedOnceAndAgainWhenItsFileChanges) {
  testing::TempDir dir;
  dir.write("spec.toml", "batch_size = 64\n");
  std::atomic<int> calls{0};
  JobStore store(dir.file("jobs.db"));
  ModelEstimates estimates(store, [&](const JobSpec& job) {
    ++calls;
    return ModelEstimate{int64_t{1} << 30, "fake of " + job.name};
  }, 2);
  JobSpec train;
  train.name = "lenet";
  train.command = {"/opt/colo/bin/colo", "train", "spec.toml", "--out", "runs/a"};
  train.workdir = dir.path();
  JobSpec shell_line = train;
  shell_line.command = {"/bin/sh", "-c", "/opt/colo/bin/colo train spec.toml --out runs/a"};
  EXPECT_FALSE(estimate_key(train).empty());
  EXPECT_EQ(estimate_key(train), estimate_key(shell_line)) << "an argv and a shell line of one command";
  ModelEstimates::Answer answer = wait_for(estimates, train);
  ASSERT_EQ(answer.status, ModelEstimates::Status::kKnown) << answer.reason;
  EXPECT_EQ(answer.bytes, int64_t{1} << 30);
  EXPECT_EQ(wait_for(estimates, shell_line).status, ModelEstimates::Status::kKnown);
  EXPECT_EQ(calls.load(), 1);

  dir.write("spec.toml", "batch_size = 256\n");
  EXPECT_EQ(estimates.lookup(train).status, ModelEstimates::Status::kPending) << "a changed spec is estimated again";
  EXPECT_EQ(wait_for(estimates, train).status, ModelEstimates::Status::kKnown);
  EXPECT_EQ(calls.load(), 2);

  JobSpec missing = train;
  missing.command = {"colo", "train", "gone.toml"};
  EXPECT_EQ(estimates.lookup(missing).status, ModelEstimates::Status::kUnknown) << "no file, no key";
  JobSpec other = train;
  other.command = {"python3", "train.py"};
  EXPECT_EQ(estimates.lookup(other).status, ModelEstimates::Status::kUnknown);
}

TEST(ModelEstimates, RunsUpToItsParallelLimitAtOnce) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  std::atomic<int> running{0}, most{0};
  ModelEstimates estimates(store, [&](const JobSpec&) {
    int now = ++running;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    --running;
    return ModelEstimate{int64_t{1} << 30, "fake"};
  }, 3);
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(model_job("models:net" + std::to_string(i)));
  for (const auto& job : jobs) estimates.lookup(job);
  EXPECT_EQ(estimates.in_flight(), 6);
  for (const auto& job : jobs) EXPECT_EQ(wait_for(estimates, job).status, ModelEstimates::Status::kKnown);
  EXPECT_EQ(most.load(), 3) << "three at once, never more";
}

TEST(ModelEstimates, AModelThatCannotBeEstimatedIsUnknownWithItsReasonAndNotAskedAgain) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  std::atomic<int> calls{0};
  ModelEstimates estimates(store, [&](const JobSpec&) -> ModelEstimate {
    ++calls;
    throw std::runtime_error("estimating models:hangs took over the time limit");
  }, 2);
  ModelEstimates::Answer answer = wait_for(estimates, model_job("models:hangs"));
  EXPECT_EQ(answer.status, ModelEstimates::Status::kUnknown);
  EXPECT_EQ(answer.reason, "estimating models:hangs took over the time limit");
  EXPECT_EQ(estimates.lookup(model_job("models:hangs")).status, ModelEstimates::Status::kUnknown);
  EXPECT_EQ(calls.load(), 1);
  JobSpec plain;
  EXPECT_EQ(estimates.lookup(plain).status, ModelEstimates::Status::kUnknown) << "no model table";
}

}  // namespace
}  // namespace colo::sched
