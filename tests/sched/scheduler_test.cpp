// The scheduler core through a scripted executor: what it launches, in
// which order, what it learns from readings, and what it leaves waiting.

#include "colo/sched/scheduler.h"

#include <gtest/gtest.h>

#include <map>

#include "support/bytes.h"

namespace colo::sched {
namespace {

using testing::kGiB;

// An executor whose readings the test sets and whose launches it records.
class ScriptedExecutor : public Executor {
 public:
  Launch launch(int64_t id, const std::vector<int>& gpus, const JobRequest& request) override {
    if (auto refusal = refuse.find(id); refusal != refuse.end()) return Launch::waits(refusal->second);
    launched.push_back({id, gpus, request});
    return Launch::started(used_at_start);
  }
  void stop(int64_t id) override { stopped.push_back(id); }
  void pause(const std::vector<int64_t>& ids) override { paused.insert(paused.end(), ids.begin(), ids.end()); }
  void resume(const std::vector<int64_t>& ids) override { resumed.insert(resumed.end(), ids.begin(), ids.end()); }
  Observation observe(double /*now_s*/) override { return next; }
  std::optional<double> normalized_throughput(int64_t /*id*/) const override { return std::nullopt; }

  struct Launched {
    int64_t id;
    std::vector<int> gpus;
    JobRequest request;
  };
  std::vector<Launched> launched;
  std::vector<int64_t> stopped;
  std::vector<int64_t> paused;
  std::vector<int64_t> resumed;
  std::map<int64_t, std::string> refuse;  // jobs whose launch waits, and why
  Observation next;
  int64_t used_at_start = 1;
};

SchedulerOptions options() {
  SchedulerOptions o;
  o.policy = "magm";
  o.thresholds.settle_active_s = 4;
  o.thresholds.settle_warmup_s = 0;
  o.thresholds.max_settling_per_gpu = 1;
  o.thresholds.mem_margin_bytes = kGiB;
  return o;
}

WaitingJob waiting(int64_t id, int64_t mem_gib, const std::string& command, double share = 0) {
  WaitingJob w;
  w.facts.id = id;
  w.facts.mem_bytes = mem_gib * kGiB;
  w.facts.sm_share = share;
  w.facts.keys = JobKeys{command, ""};
  w.rank = QueueKey{false, 0, static_cast<double>(id), id};
  return w;
}

Observation reading(double activity, int64_t free_gib) {
  Observation o;
  o.gpus.push_back({0, activity, free_gib * kGiB});
  return o;
}

TEST(Scheduler, LaunchesInRankOrderAndALaunchThatWaitsHoldsNothingBack) {
  Scheduler scheduler({80 * kGiB}, options());
  ScriptedExecutor executor;
  executor.refuse[1] = "waiting for its shared loader (d) to fill its ring";
  RoundOutcome out = scheduler.round({waiting(1, 10, "a", 0.2), waiting(2, 10, "b", 0.2), waiting(3, 10, "c", 0.2)},
                                     executor, 0);
  ASSERT_EQ(executor.launched.size(), 2u);
  EXPECT_EQ(executor.launched[0].id, 2);
  EXPECT_EQ(executor.launched[1].id, 3);
  EXPECT_EQ(out.started, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out.waiting.at(1), "waiting for its shared loader (d) to fill its ring");
  EXPECT_FALSE(out.reserved_for);
  EXPECT_EQ(scheduler.ledger().jobs_on(0), (std::vector<int64_t>{2, 3}));
}

TEST(Scheduler, AShareMeasuredFromReadingsIsLearnedSoTheNextJobOfItsCommandNeedNotSettle) {
  Scheduler scheduler({80 * kGiB}, options());
  ScriptedExecutor executor;
  executor.next = reading(0.0, 80);
  scheduler.observe(executor, 0);
  scheduler.round({waiting(1, 10, "python train.py --lr 0.1")}, executor, 0);
  ASSERT_EQ(executor.launched.size(), 1u);
  EXPECT_EQ(executor.launched[0].request.sm_share, 0) << "no share declared or learned: it settles";
  EXPECT_TRUE(scheduler.ledger().jobs().at(1).settling);

  executor.next = reading(0.45, 70);
  executor.next.jobs.push_back({1, 10 * kGiB, true, std::nullopt, std::nullopt});
  Measured m;
  for (double t = 1; t <= 6 && m.shares.empty(); t += 0.5) m = scheduler.observe(executor, t);
  ASSERT_EQ(m.shares.size(), 1u) << "the settle window ends settle_active_s after training began";
  EXPECT_NEAR(m.shares[0].share, 0.45, 0.01);

  scheduler.round({waiting(2, 10, "python train.py --lr 0.1")}, executor, 7);
  ASSERT_EQ(executor.launched.size(), 2u);
  EXPECT_NEAR(executor.launched[1].request.sm_share, 0.45, 0.01) << "the same command takes the learned share";
  EXPECT_FALSE(scheduler.ledger().jobs().at(2).settling);
}

TEST(Scheduler, AShareTheReadingsCouldNotSeeIsNotLearnedSoTheNextJobOfItsCommandSettlesAgain) {
  Scheduler scheduler({80 * kGiB}, options());
  ScriptedExecutor executor;
  executor.next = reading(0.95, 70);
  scheduler.round({waiting(1, 10, "python big.py", 0.95)}, executor, 0);
  for (double t = 0; t <= 3; t += 0.5) scheduler.observe(executor, t);
  scheduler.round({waiting(2, 10, "python train.py --lr 0.1")}, executor, 3);
  ASSERT_EQ(executor.launched.size(), 2u) << "the GPU is not closed yet: the job joins";
  executor.next.jobs.push_back({2, 10 * kGiB, true, std::nullopt, std::nullopt});
  Measured m;
  for (double t = 3.5; t <= 12 && m.shares.empty(); t += 0.5) m = scheduler.observe(executor, t);
  ASSERT_EQ(m.shares.size(), 1u);
  EXPECT_FALSE(m.shares[0].seen) << "a full GPU that did not move showed nothing of job 2";

  executor.next.jobs.clear();
  scheduler.ended(1, 13);
  scheduler.ended(2, 13);
  scheduler.round({waiting(3, 10, "python train.py --lr 0.1")}, executor, 13);
  ASSERT_EQ(executor.launched.size(), 3u);
  EXPECT_EQ(executor.launched[2].request.sm_share, 0) << "nothing learned: it settles";
}

// Two jobs of unknown share start together on an idle GPU and begin to
// train at once; the GPU rises to 0.6. Returns what was measured.
std::vector<MeasuredShare> settled_together(const std::string& command1, const std::string& command2) {
  SchedulerOptions o = options();
  o.thresholds.max_settling_per_gpu = 2;
  Scheduler scheduler({80 * kGiB}, o);
  ScriptedExecutor executor;
  executor.next = reading(0.0, 80);
  scheduler.observe(executor, 0);
  scheduler.round({waiting(1, 10, command1), waiting(2, 10, command2)}, executor, 0);
  EXPECT_EQ(executor.launched.size(), 2u);
  executor.next = reading(0.6, 60);
  executor.next.jobs.push_back({1, 10 * kGiB, true, std::nullopt, std::nullopt});
  executor.next.jobs.push_back({2, 10 * kGiB, true, std::nullopt, std::nullopt});
  Measured m;
  for (double t = 1; t <= 10 && m.shares.size() < 2; t += 0.5) {
    Measured now = scheduler.observe(executor, t);
    m.shares.insert(m.shares.end(), now.shares.begin(), now.shares.end());
  }
  EXPECT_EQ(m.shares.size(), 2u);
  return m.shares;
}

TEST(Scheduler, JobsOfOtherCommandsSettledTogetherKeepTheirMeanAsNeitherOnesShare) {
  for (const MeasuredShare& m : settled_together("python lenet.py", "python transformer.py")) {
    EXPECT_NEAR(m.share, 0.3, 1e-9) << "the 0.6 rise split";
    EXPECT_FALSE(m.seen) << "job " << m.id << ": a mean of two different jobs is neither's";
    EXPECT_NE(m.unseen_because.find("settled together with job"), std::string::npos) << m.unseen_because;
  }
  for (const MeasuredShare& m : settled_together("python train.py --seed 1", "python train.py --seed 1")) {
    EXPECT_TRUE(m.seen) << "two runs of one command: the mean is each one's share";
  }
}

TEST(Scheduler, AJobOnAFullGpuIsMeasuredAloneThroughTheExecutorsPauseAndLearned) {
  SchedulerOptions o = options();
  o.thresholds.probe_alone = true;
  Scheduler scheduler({80 * kGiB}, o);
  ScriptedExecutor executor;
  executor.next = reading(0.95, 70);
  scheduler.round({waiting(1, 10, "python big.py", 0.95)}, executor, 0);
  for (double t = 0; t <= 3; t += 0.5) scheduler.observe(executor, t);
  scheduler.round({waiting(2, 10, "python train.py --lr 0.1")}, executor, 3);
  executor.next.jobs.push_back({2, 10 * kGiB, true, std::nullopt, std::nullopt});
  Measured m;
  double t = 3.5;
  for (; t <= 20 && executor.paused.empty(); t += 0.5) m = scheduler.observe(executor, t);
  EXPECT_EQ(executor.paused, (std::vector<int64_t>{1})) << "its window ended: its neighbour pauses";
  executor.next.gpus[0].sm_activity = 0.35;  // job 2 alone
  for (; t <= 30 && m.shares.empty(); t += 0.5) m = scheduler.observe(executor, t);
  ASSERT_EQ(m.shares.size(), 1u);
  EXPECT_TRUE(m.shares[0].alone);
  EXPECT_NEAR(m.shares[0].share, 0.35, 1e-9);
  EXPECT_EQ(executor.resumed, (std::vector<int64_t>{1}));

  scheduler.ended(1, t);
  scheduler.ended(2, t);
  scheduler.round({waiting(3, 10, "python train.py --lr 0.1")}, executor, t);
  ASSERT_EQ(executor.launched.size(), 3u);
  EXPECT_NEAR(executor.launched[2].request.sm_share, 0.35, 1e-9) << "its command learned the share alone";
}

TEST(Scheduler, AJobWaitingForItsEstimateStartsOnlyOnAnEmptyGpu) {
  Scheduler scheduler({80 * kGiB, 80 * kGiB}, options());
  ScriptedExecutor executor;
  WaitingJob pending = waiting(2, 0, "python big.py");
  pending.facts.mem_bytes.reset();
  pending.estimate_pending = "waiting for the estimate of its model";
  scheduler.round({waiting(1, 10, "a", 0.2)}, executor, 0);
  RoundOutcome first = scheduler.round({pending}, executor, 0);
  ASSERT_EQ(first.started, (std::vector<int64_t>{2})) << "GPU 1 is empty";
  EXPECT_EQ(executor.launched.back().gpus, (std::vector<int>{1}));

  WaitingJob another = pending;
  another.facts.id = 3;
  RoundOutcome second = scheduler.round({another}, executor, 1);
  EXPECT_TRUE(second.started.empty()) << "no GPU is empty now";
  EXPECT_EQ(second.waiting.at(3), "waiting for the estimate of its model");
}

TEST(Scheduler, StopGoesThroughTheExecutorAndReopensTheGpu) {
  SchedulerOptions o = options();
  o.mode = CollocationMode::kExclusive;
  Scheduler scheduler({80 * kGiB}, o);
  ScriptedExecutor executor;
  scheduler.round({waiting(1, 10, "a", 0.2)}, executor, 0);
  RoundOutcome blocked = scheduler.round({waiting(2, 10, "b", 0.2)}, executor, 1);
  EXPECT_TRUE(blocked.started.empty()) << "exclusive: one job a GPU";

  scheduler.stop(executor, 1, 2);
  EXPECT_EQ(executor.stopped, (std::vector<int64_t>{1}));
  RoundOutcome after = scheduler.round({waiting(2, 10, "b", 0.2)}, executor, 3);
  EXPECT_EQ(after.started, (std::vector<int64_t>{2}));
}

TEST(Scheduler, AJobThatWaitedPastTheReservationHoldsBackTheJobsAfterIt) {
  SchedulerOptions o = options();
  o.backfill.reserve_after_s = 60;
  Scheduler scheduler({80 * kGiB}, o);
  ScriptedExecutor executor;
  scheduler.round({waiting(9, 10, "running", 0.2)}, executor, 0);
  WaitingJob big = waiting(1, 75, "big", 0.2);  // does not fit beside job 9
  big.waited_s = 61;
  RoundOutcome out = scheduler.round({big, waiting(2, 10, "small", 0.2)}, executor, 1);
  ASSERT_EQ(executor.launched.size(), 1u) << "only job 9";
  EXPECT_EQ(out.reserved_for, 1);
  EXPECT_EQ(out.waiting.count(2), 0u) << "not tried";
}

}  // namespace
}  // namespace colo::sched
