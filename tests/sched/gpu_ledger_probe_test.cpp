// The ledger's probes: a settling job measured alone, its neighbours paused.

#include <gtest/gtest.h>

#include <algorithm>

#include "colo/sched/gpu_ledger.h"
#include "support/bytes.h"

namespace colo::sched {
namespace {

using testing::kGiB;

JobRequest request(int64_t id, double share = 0) { return JobRequest{id, 10 * kGiB, share, false, 0, 1}; }

// Measured over 4 s after a 1 s warm-up; a probe drains for 1 s.
Thresholds probing_thresholds() {
  Thresholds t;
  t.settle_active_s = 4;
  t.settle_warmup_s = 1;
  t.max_settling_per_gpu = 2;
  t.probe_alone = true;
  t.probe_drain_s = 1;
  return t;
}

bool has(const std::vector<int64_t>& ids, int64_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

// A GPU whose readings follow what is paused: `busy` with every job
// running, `alone[id]` while job id runs alone, and 0.7 in the drain's
// first second (kernels in flight).
struct ProbedGpu {
  explicit ProbedGpu(const Thresholds& t = probing_thresholds()) : ledger({80 * kGiB}, CollocationMode::kMps, t) {}
  GpuLedger ledger;
  double busy = 0.95;
  std::map<int64_t, double> alone;
  std::vector<int64_t> paused;
  double paused_since = -1;
  std::vector<ProbeSteps> steps;  // each non-empty one, in order
  std::vector<std::pair<double, MeasuredShare>> measured;

  double activity(double t) const {
    if (paused.empty()) return busy;
    if (t <= paused_since + 1) return 0.7;
    for (const auto& [id, a] : alone) {
      if (!has(paused, id)) return a;
    }
    return 0;
  }
  // Readings every 0.5 s from `from` to `to`, each followed by settle().
  void run(double from, double to) {
    for (double t = from; t <= to + 1e-9; t += 0.5) {
      ledger.observe(0, t, activity(t), 60 * kGiB);
      for (const MeasuredShare& m : ledger.settle(t)) measured.emplace_back(t, m);
      ProbeSteps s = ledger.take_probe_steps();
      if (s.pause.empty() && s.resume.empty()) continue;
      for (int64_t id : s.resume) paused.erase(std::remove(paused.begin(), paused.end(), id), paused.end());
      for (int64_t id : s.pause) paused.push_back(id);
      paused_since = t;
      steps.push_back(s);
    }
  }
};

TEST(GpuLedgerProbe, AJobOnAFullGpuIsMeasuredAloneWhileItsNeighbourIsPaused) {
  ProbedGpu gpu;
  gpu.alone = {{2, 0.4}};
  gpu.ledger.place(request(1, 0.95), {0}, 0);  // known: it keeps the GPU 0.95 busy
  gpu.run(0, 10);
  gpu.ledger.place(request(2), {0}, 10);
  gpu.ledger.started_training(2, 10);
  EXPECT_DOUBLE_EQ(gpu.ledger.next_settle_s(), 15);
  gpu.run(10.5, 15);
  ASSERT_EQ(gpu.steps.size(), 1u) << "its window ended at 15: its neighbour pauses";
  EXPECT_EQ(gpu.steps[0].pause, (std::vector<int64_t>{1}));
  EXPECT_TRUE(gpu.measured.empty()) << "nothing is measured before the probe ends";
  EXPECT_DOUBLE_EQ(gpu.ledger.next_settle_s(), 20) << "1 s of drain and 4 s alone";
  EXPECT_TRUE(gpu.ledger.probing(0, 15));
  gpu.run(15.5, 20);
  ASSERT_EQ(gpu.measured.size(), 1u);
  const auto& [at, m] = gpu.measured[0];
  EXPECT_DOUBLE_EQ(at, 20);
  EXPECT_TRUE(m.alone);
  EXPECT_TRUE(m.seen);
  EXPECT_NEAR(m.share, 0.4, 1e-9) << "its activity alone, not the drain's 0.7 nor the full GPU's nothing";
  EXPECT_FALSE(m.beside) << "beside it, the full GPU showed nothing of it";
  ASSERT_EQ(gpu.steps.size(), 2u);
  EXPECT_EQ(gpu.steps[1].resume, (std::vector<int64_t>{1}));
  EXPECT_FALSE(gpu.ledger.jobs().at(2).settling);
  EXPECT_NEAR(gpu.ledger.jobs().at(2).sm_share, 0.4, 1e-9);
  EXPECT_TRUE(gpu.ledger.probing(0, 23.9)) << "its neighbour's rate still shows the pause";
  EXPECT_FALSE(gpu.ledger.probing(0, 24.1));
}

TEST(GpuLedgerProbe, ReadingsWhileItsJobsArePausedAreNotTheGpusLoad) {
  ProbedGpu gpu;
  gpu.alone = {{2, 0.4}};
  gpu.ledger.place(request(1, 0.5), {0}, 0);  // declared 0.5; the GPU reads 0.95 busy
  gpu.run(0, 10);
  gpu.ledger.place(request(2), {0}, 10);
  gpu.ledger.started_training(2, 10);
  gpu.run(10.5, 17);
  ASSERT_EQ(gpu.steps.size(), 1u) << "job 1 paused at 15";
  EXPECT_NEAR(gpu.ledger.view(0, 17).sm_activity, 0.95, 1e-9)
      << "the GPU as it was before the pause, not the drain's 0.7 and job 2's 0.4 alone";
  gpu.run(17.5, 20);
  ASSERT_EQ(gpu.measured.size(), 1u);
  EXPECT_NEAR(gpu.measured[0].second.share, 0.4, 1e-9) << "the probe itself reads the pause";
  EXPECT_NEAR(gpu.ledger.view(0, 20).sm_activity, 0.95, 1e-9) << "every reading in the window was paused";
  gpu.ledger.place(request(3), {0}, 20);
  EXPECT_NEAR(gpu.ledger.jobs().at(3).activity_before, 0.95, 1e-9)
      << "a newcomer's baseline is the GPU's load: its rise is read against it";
  gpu.run(20.5, 25);
  EXPECT_NEAR(gpu.ledger.view(0, 25).sm_activity, 0.95, 1e-9) << "readings since the resume count again";
}

TEST(GpuLedgerProbe, AJobDueDuringAnotherProbeWaitsForItAndIsThenProbedItself) {
  ProbedGpu gpu;
  gpu.alone = {{2, 0.4}, {3, 0.3}};
  gpu.ledger.place(request(1, 0.6), {0}, 0);
  gpu.ledger.place(request(2), {0}, 10);
  gpu.ledger.started_training(2, 10);
  gpu.ledger.place(request(3), {0}, 11);
  gpu.ledger.started_training(3, 11);
  gpu.run(0, 16);
  ASSERT_EQ(gpu.steps.size(), 1u);
  EXPECT_EQ(gpu.steps[0].pause, (std::vector<int64_t>{1, 3}));
  EXPECT_DOUBLE_EQ(gpu.ledger.next_settle_s(), 20) << "job 3, due at 16, waits for job 2's probe";
  gpu.run(16.5, 25);
  ASSERT_EQ(gpu.measured.size(), 2u);
  EXPECT_EQ(gpu.measured[0].second.id, 2);
  EXPECT_NEAR(gpu.measured[0].second.share, 0.4, 1e-9);
  EXPECT_EQ(gpu.measured[1].second.id, 3);
  EXPECT_DOUBLE_EQ(gpu.measured[1].first, 25);
  EXPECT_NEAR(gpu.measured[1].second.share, 0.3, 1e-9);
  ASSERT_EQ(gpu.steps.size(), 3u);
  EXPECT_EQ(gpu.steps[1].resume, (std::vector<int64_t>{1, 3})) << "one call ends job 2's probe";
  EXPECT_EQ(gpu.steps[1].pause, (std::vector<int64_t>{1, 2})) << "and starts job 3's";
  EXPECT_EQ(gpu.steps[2].resume, (std::vector<int64_t>{1, 2}));
}

TEST(GpuLedgerProbe, AProbedJobThatLeavesLetsItsNeighboursRunOnAndIsNotMeasured) {
  ProbedGpu gpu;
  gpu.alone = {{2, 0.4}};
  gpu.ledger.place(request(1, 0.9), {0}, 0);
  gpu.ledger.place(request(2), {0}, 10);
  gpu.ledger.started_training(2, 10);
  gpu.run(0, 17);
  EXPECT_FALSE(gpu.ledger.remove(2, 17)) << "part of a probe measures nothing";
  EXPECT_EQ(gpu.ledger.take_probe_steps().resume, (std::vector<int64_t>{1}));
  EXPECT_FALSE(gpu.ledger.probing(0, 21.1)) << "its neighbour's rate shows the pause until 4 s after it ended";
}

TEST(GpuLedgerProbe, APausedNeighbourThatLeavesIsNotResumed) {
  ProbedGpu gpu;
  gpu.alone = {{3, 0.5}};
  gpu.ledger.place(request(1, 0.5), {0}, 0);
  gpu.ledger.place(request(2, 0.4), {0}, 0);
  gpu.ledger.place(request(3), {0}, 10);
  gpu.ledger.started_training(3, 10);
  gpu.run(0, 16);
  gpu.ledger.remove(1, 16);
  gpu.run(16.5, 20);
  ASSERT_EQ(gpu.measured.size(), 1u);
  EXPECT_NEAR(gpu.measured[0].second.share, 0.5, 1e-9);
  ASSERT_EQ(gpu.steps.size(), 2u);
  EXPECT_EQ(gpu.steps[1].resume, (std::vector<int64_t>{2}));
}

// Job 1 (share 0.5) runs; job 2, of unknown share, starts at 5 s and
// shows its memory (1 GiB) at 10 s, then reports no progress: its memory
// is quiet, as while it starts up on the CPU. Memory quiet for 9 s settles.
ProbedGpu quiet_start_up(double settle_s) {
  Thresholds t = probing_thresholds();
  t.settle_quiet_s = 9;
  t.settle_s = settle_s;
  ProbedGpu gpu(t);
  gpu.ledger.place(request(1, 0.5), {0}, 0);
  gpu.ledger.place(request(2), {0}, 5);
  gpu.ledger.observe_peak(2, kGiB, 10);
  return gpu;
}

// Job 2 reports no progress: its memory is quiet from 10 s, while it
// still starts up on the CPU until 30 s; then its model comes to the GPU
// (its memory grows) and it uses 0.6 alone.
TEST(GpuLedgerProbe, AJobThatReportsNoTrainingAndShowsAlmostNothingAloneIsMeasuredAgainOnceItsMemoryGrows) {
  ProbedGpu gpu = quiet_start_up(60);
  gpu.alone = {{2, 0.03}};
  gpu.run(0, 30);
  ASSERT_EQ(gpu.measured.size(), 1u) << "probed at 19 s, once its memory had been quiet for 9 s";
  EXPECT_DOUBLE_EQ(gpu.measured[0].first, 24);
  EXPECT_TRUE(gpu.measured[0].second.again);
  EXPECT_FALSE(gpu.measured[0].second.seen);
  EXPECT_TRUE(gpu.ledger.jobs().at(2).settling);
  EXPECT_DOUBLE_EQ(gpu.ledger.next_settle_s(), 65) << "nothing changed: not before its settle limit";
  gpu.alone = {{2, 0.6}};
  gpu.ledger.observe_peak(2, 5 * kGiB, 30);
  gpu.run(30.5, 45);
  ASSERT_EQ(gpu.measured.size(), 2u) << "probed again at 39 s, its memory quiet for 9 s since it grew";
  EXPECT_DOUBLE_EQ(gpu.measured[1].first, 44);
  EXPECT_FALSE(gpu.measured[1].second.again);
  EXPECT_NEAR(gpu.measured[1].second.share, 0.6, 1e-9);
  EXPECT_FALSE(gpu.ledger.jobs().at(2).settling);
}

TEST(GpuLedgerProbe, AJobThatStillShowsAlmostNothingAtTheSettleLimitIsTakenAsItIs) {
  ProbedGpu gpu = quiet_start_up(30);
  gpu.alone = {{2, 0.03}};
  gpu.run(0, 60);
  ASSERT_EQ(gpu.measured.size(), 2u) << "a light job is probed twice";
  EXPECT_TRUE(gpu.measured[0].second.again);
  EXPECT_DOUBLE_EQ(gpu.measured[1].first, 40) << "probed at its settle limit (35 s)";
  EXPECT_FALSE(gpu.measured[1].second.again) << "past its settle limit: taken as it is";
  EXPECT_NEAR(gpu.measured[1].second.share, 0.03, 1e-9);
}

// Job 2's memory is quiet from 10 s while it starts up; its first progress
// report comes at 30 s. Measured at 0.5 first, then at 0.8 as it trains.
TEST(GpuLedgerProbe, AJobMeasuredBeforeItsFirstProgressReportIsMeasuredOnceMoreFromIt) {
  ProbedGpu gpu = quiet_start_up(60);
  gpu.alone = {{2, 0.5}};
  gpu.run(0, 30);
  ASSERT_EQ(gpu.measured.size(), 1u);
  EXPECT_NEAR(gpu.measured[0].second.share, 0.5, 1e-9);
  EXPECT_FALSE(gpu.measured[0].second.once_training);
  EXPECT_FALSE(gpu.ledger.jobs().at(2).settling);
  gpu.alone = {{2, 0.8}};
  gpu.ledger.started_training(2, 30);
  EXPECT_TRUE(gpu.ledger.jobs().at(2).settling);
  EXPECT_NEAR(gpu.ledger.jobs().at(2).sm_share, 0.5, 1e-9) << "it keeps its first share meanwhile";
  gpu.run(30.5, 45);
  ASSERT_EQ(gpu.measured.size(), 2u);
  EXPECT_DOUBLE_EQ(gpu.measured[1].first, 40) << "probed at 35 s: 1 s of warm-up and 4 s after its report";
  EXPECT_TRUE(gpu.measured[1].second.once_training);
  EXPECT_NEAR(gpu.measured[1].second.share, 0.8, 1e-9);
  gpu.ledger.started_training(2, 46);
  EXPECT_FALSE(gpu.ledger.jobs().at(2).settling) << "once more only";
}

// Job 2's memory is quiet from 10 s, so it is probed at 19 s and measured
// from 20 s; it shows nothing alone until its first progress report at
// 22 s, then 0.8. The stretch mixed start-up with training (about 0.4).
TEST(GpuLedgerProbe, AJobThatBeginsTrainingWhileItIsMeasuredIsMeasuredAgainFromItsFirstReport) {
  ProbedGpu gpu = quiet_start_up(60);
  gpu.alone = {{2, 0.0}};
  gpu.run(0, 22);
  gpu.ledger.started_training(2, 22);
  gpu.alone = {{2, 0.8}};
  gpu.run(22.5, 35);
  ASSERT_EQ(gpu.measured.size(), 2u);
  EXPECT_DOUBLE_EQ(gpu.measured[0].first, 24);
  EXPECT_TRUE(gpu.measured[0].second.again) << "what it read, about 0.4, was partly its start-up";
  EXPECT_FALSE(gpu.measured[0].second.seen);
  EXPECT_DOUBLE_EQ(gpu.measured[1].first, 32) << "probed at 27 s: 1 s of warm-up and 4 s after its report";
  EXPECT_FALSE(gpu.measured[1].second.again);
  EXPECT_NEAR(gpu.measured[1].second.share, 0.8, 1e-9);
  EXPECT_FALSE(gpu.ledger.jobs().at(2).settling);
}

TEST(GpuLedgerProbe, AJobAloneMeasuredBeforeItsFirstProgressReportIsMeasuredFromNothingOnceItTrains) {
  Thresholds t = probing_thresholds();
  t.settle_quiet_s = 9;
  ProbedGpu gpu(t);
  gpu.busy = 0.3;  // its start-up's own activity
  gpu.ledger.observe(0, 0, 0.0, 80 * kGiB);
  gpu.ledger.place(request(2), {0}, 1);
  gpu.ledger.observe_peak(2, kGiB, 2);
  gpu.run(1, 20);
  ASSERT_EQ(gpu.measured.size(), 1u);
  EXPECT_NEAR(gpu.measured[0].second.share, 0.3, 1e-9);
  gpu.ledger.started_training(2, 20);
  gpu.busy = 0.7;
  gpu.run(20.5, 26);
  ASSERT_EQ(gpu.measured.size(), 2u);
  EXPECT_NEAR(gpu.measured[1].second.share, 0.7, 1e-9) << "not its rise over its own 0.3";
}

TEST(GpuLedgerProbe, AProbeWithoutReadingsOfItsGpuIsNotSeen) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, probing_thresholds());
  ledger.place(request(1, 0.9), {0}, 0);
  ledger.place(request(2), {0}, 10);
  ledger.started_training(2, 10);
  for (double t = 10; t <= 15; t += 0.5) ledger.observe(0, t, 0.9, 60 * kGiB);
  EXPECT_TRUE(ledger.settle(15).empty());
  EXPECT_EQ(ledger.take_probe_steps().pause, (std::vector<int64_t>{1}));
  std::vector<MeasuredShare> measured = ledger.settle(20);  // NVML gave nothing meanwhile
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_FALSE(measured[0].seen);
  EXPECT_EQ(measured[0].unseen_because, "its GPU gave no reading while it ran alone");
  EXPECT_EQ(ledger.take_probe_steps().resume, (std::vector<int64_t>{1}));
}

TEST(GpuLedgerProbe, AGpuThatGivesNoActivityReadingsPausesNoJob) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, probing_thresholds());
  ledger.place(request(1, 0.5), {0}, 0);
  ledger.place(request(2), {0}, 10);
  ledger.started_training(2, 10);
  for (double t = 10; t <= 15; t += 0.5) ledger.observe(0, t, std::nullopt, 60 * kGiB);  // memory only
  EXPECT_EQ(ledger.settle(15).size(), 1u) << "measured as it can be, at once";
  EXPECT_TRUE(ledger.take_probe_steps().pause.empty()) << "a pause would show nothing";
}

TEST(GpuLedgerProbe, AJobOfTwoGpusIsMeasuredAloneOnBothAtItsBusierOne) {
  GpuLedger ledger({80 * kGiB, 80 * kGiB}, CollocationMode::kMps, probing_thresholds());
  ledger.place(request(1, 0.9), {1}, 0);  // a neighbour on its second GPU only
  JobRequest two = request(2);
  two.gpus = 2;
  ledger.place(two, {0, 1}, 10);
  ledger.started_training(2, 10);
  for (double t = 10; t <= 15; t += 0.5) {
    ledger.observe(0, t, 0.5, 60 * kGiB);
    ledger.observe(1, t, 1.0, 60 * kGiB);
  }
  EXPECT_TRUE(ledger.settle(15).empty());
  EXPECT_EQ(ledger.take_probe_steps().pause, (std::vector<int64_t>{1}));
  std::vector<MeasuredShare> measured;
  for (double t = 15.5; t <= 20 && measured.empty(); t += 0.5) {
    ledger.observe(0, t, 0.5, 60 * kGiB);
    ledger.observe(1, t, 0.6, 60 * kGiB);  // job 2 alone there
    measured = ledger.settle(t);
  }
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_NEAR(measured[0].share, 0.6, 1e-9) << "the larger of its two GPUs' activity alone";
}

TEST(GpuLedgerProbe, AJobAloneOnItsGpuIsMeasuredByItsRiseWithoutAProbe) {
  ProbedGpu gpu;
  gpu.busy = 0.45;
  gpu.ledger.place(request(2), {0}, 10);
  gpu.ledger.started_training(2, 10);
  gpu.run(10, 15);
  EXPECT_TRUE(gpu.steps.empty());
  ASSERT_EQ(gpu.measured.size(), 1u);
  EXPECT_FALSE(gpu.measured[0].second.alone);
  EXPECT_NEAR(gpu.measured[0].second.share, 0.45, 1e-9);
}

}  // namespace
}  // namespace colo::sched
