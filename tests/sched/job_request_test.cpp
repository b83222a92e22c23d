#include "colo/sched/job_request.h"

#include <gtest/gtest.h>

#include "colo/sched/simulator.h"
#include "support/bytes.h"

namespace colo::sched {
namespace {

using testing::kGiB;

RequestFacts facts(std::optional<int64_t> mem, double share) {
  RequestFacts f;
  f.id = 7;
  f.mem_bytes = mem;
  f.sm_share = share;
  f.gpus = 2;
  f.keys = JobKeys{"train.py", "resnet"};
  return f;
}

TEST(BuildRequest, WhatAJobStatesWinsOverHistory) {
  JobHistory history;
  history.learn_share({"train.py", "resnet"}, 0.9);
  history.learn_peak({"train.py", "resnet"}, 20 * kGiB);
  JobRequest r = build_request(facts(4 * kGiB, 0.3), history, RecoveryOptions{}, true);
  EXPECT_EQ(r.id, 7);
  EXPECT_EQ(r.mem_bytes, 4 * kGiB);
  EXPECT_DOUBLE_EQ(r.sm_share, 0.3);
  EXPECT_EQ(r.gpus, 2);
  EXPECT_FALSE(r.provisional);
  EXPECT_FALSE(r.must_run_alone);
}

TEST(BuildRequest, WhatItDoesNotStateComesFromItsCommandElseItsModel) {
  JobHistory history;
  history.learn_share({"other.py", "resnet"}, 0.4);  // same model, another command
  history.learn_peak({"train.py", "vit"}, 10 * kGiB);
  JobRequest r = build_request(facts(std::nullopt, 0), history, RecoveryOptions{}, false);
  EXPECT_DOUBLE_EQ(r.sm_share, 0.4);
  EXPECT_EQ(r.mem_bytes, 11 * kGiB);  // the command's peak plus 10%
  EXPECT_FALSE(r.provisional);
}

TEST(BuildRequest, UnknownMemoryIsProvisionalOnlyWhereTheCallerAllowsIt) {
  JobHistory history;
  EXPECT_FALSE(build_request(facts(std::nullopt, 0), history, RecoveryOptions{}, true).mem_bytes);
  EXPECT_TRUE(build_request(facts(std::nullopt, 0), history, RecoveryOptions{}, true).provisional);
  EXPECT_FALSE(build_request(facts(std::nullopt, 0), history, RecoveryOptions{}, false).provisional);
}

TEST(BuildRequest, AJobWaitingAfterAnOomDeathAsksForItsRetry) {
  JobHistory history;
  RequestFacts f = facts(4 * kGiB, 0.3);
  f.oom_deaths = 2;
  f.peak_bytes = 10 * kGiB;
  EXPECT_TRUE(build_request(f, history, RecoveryOptions{}, false).must_run_alone);  // RAD-RM's rule
  RecoveryOptions margin;
  margin.rule = RecoveryRule::kPeakMargin;
  JobRequest r = build_request(f, history, margin, false);
  EXPECT_EQ(r.min_free_bytes, 12 * kGiB);  // peak x (1 + 0.1 x 2)
  EXPECT_EQ(r.mem_bytes, 12 * kGiB);
}

// The simulator asks by the runner's rule: a job of unknown memory whose
// command completed before reserves that run's peak plus 10%, so it may
// join a busy GPU instead of waiting for an empty one.
TEST(BuildRequest, InTheSimulatorAnUnknownJobOfAKnownCommandJoinsABusyGpu) {
  auto job = [](double submit, const std::string& name, double duration, std::optional<int64_t> estimate) {
    TraceJob j;
    j.submit_s = submit;
    j.name = name;
    j.command = "python3 " + name + ".py";
    j.duration_s = duration;
    j.mem_bytes = 10 * kGiB;
    j.sm_activity = 0.3;
    j.mem_estimate_bytes = estimate;
    return j;
  };
  std::vector<TraceJob> trace{job(0, "a", 10, std::nullopt), job(15, "b", 100, 10 * kGiB),
                              job(20, "a", 10, std::nullopt)};
  SimulationOptions o;
  o.gpus = 1;
  o.policy = "magm";
  SimulationResult r = simulate(trace, o);
  EXPECT_DOUBLE_EQ(r.jobs[0].start_s, 0);
  EXPECT_DOUBLE_EQ(r.jobs[2].start_s, 20);  // beside b, which runs until 115
  trace[2].command = "python3 new.py";      // never ran: unknown, it waits for an empty GPU
  EXPECT_GE(simulate(trace, o).jobs[2].start_s, 115);
}

}  // namespace
}  // namespace colo::sched
