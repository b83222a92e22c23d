// The accounting rules the runner and the simulator share.

#include "colo/sched/gpu_ledger.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace colo::sched {
namespace {

using testing::kGiB;

JobRequest request(int64_t id, int64_t mem_gib, double share = 0, int gpus = 1) {
  return JobRequest{id, mem_gib * kGiB, share, false, 0, gpus};
}

Thresholds thresholds() {
  Thresholds t;
  t.settle_s = 8;
  t.settle_active_s = 4;
  t.min_sm_gain = 0.03;
  t.saturation_floor = 0.5;
  t.max_settling_per_gpu = 1;
  t.settle_quiet_s = 4;
  return t;
}

// Several jobs settle at once on a GPU; a job of unknown memory may join a busy one.
Thresholds sharing_thresholds() {
  Thresholds t = thresholds();
  t.settle_active_s = 3;
  t.settle_warmup_s = 1;
  t.settle_quiet_s = 9;
  t.settle_s = 60;
  t.max_settling_per_gpu = 2;
  t.mem_margin_bytes = kGiB;
  return t;
}

JobRequest provisional(int64_t id, int gpus = 1) {
  JobRequest r{id, std::nullopt, 0, false, 0, gpus};
  r.provisional = true;
  return r;
}

TEST(GpuLedger, AGpuIsSteadyWhileItsReadingsAreOneValueAndNoJobSettles) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 10, 0.3), {0}, 0);
  ledger.observe(0, 0, 0.3, 70 * kGiB);
  ledger.observe(0, 1, 0.3, 70 * kGiB);
  EXPECT_TRUE(ledger.steady(0));
  GpuView before = ledger.view(0, 1);
  EXPECT_DOUBLE_EQ(ledger.view(0, 50).sm_activity, before.sm_activity) << "a steady view does not move with time";
  ledger.observe(0, 2, 0.6, 60 * kGiB);
  EXPECT_FALSE(ledger.steady(0)) << "a change of reading is averaged in over the window";
  ledger.place(request(2, 10, 0.0), {0}, 2);  // unknown share: it settles
  ledger.observe(0, 100, 0.6, 60 * kGiB);   // the old reading has left the window
  EXPECT_FALSE(ledger.steady(0)) << "a settling job's view counts down";
  ledger.remove(2, 101);
  EXPECT_TRUE(ledger.steady(0));
}

TEST(GpuLedger, ReservesEstimatePlusMarginOrTheMeasuredPeak) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 10, 0.2), {0}, 0);
  EXPECT_EQ(ledger.views(0)[0].mem_free_bytes, 69 * kGiB);
  ledger.observe_peak(1, 20 * kGiB, 0);
  EXPECT_EQ(ledger.views(0)[0].mem_free_bytes, 60 * kGiB) << "a peak above the reservation counts";
  ledger.observe(0, 1, 0.1, 50 * kGiB);
  EXPECT_EQ(ledger.views(1)[0].mem_free_bytes, 50 * kGiB) << "the device's own reading caps what is left";
  EXPECT_DOUBLE_EQ(ledger.views(1)[0].sm_activity, 0.2) << "known shares count while the reading lags";
}

TEST(GpuLedger, AJobOfUnknownShareClosesItsGpuUntilItsShareIsMeasured) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.observe(0, 0, 0.0, std::nullopt);
  ledger.place(request(1, 4), {0}, 0);
  EXPECT_NE(ledger.views(1)[0].settling_reason.find("job 1 settling"), std::string::npos);
  EXPECT_DOUBLE_EQ(ledger.next_settle_s(), 8);
  for (double t = 1; t <= 8; t += 1) ledger.observe(0, t, 0.25, std::nullopt);
  auto measured = ledger.settle(8);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_NEAR(measured[0].share, 0.25, 1e-9);
  EXPECT_FALSE(measured[0].saturated);
  EXPECT_EQ(ledger.views(8)[0].settling_reason, "");
  EXPECT_NEAR(ledger.views(8)[0].sm_activity, 0.25, 1e-9);
}

TEST(GpuLedger, ASettlingJobIsMeasuredOnceItHasBeenActiveLongEnough) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 4), {0}, 0);
  ledger.observe_peak(1, 0, 1);
  EXPECT_DOUBLE_EQ(ledger.next_settle_s(), 8) << "no memory on the GPU yet: the longest window";
  ledger.observe_peak(1, kGiB, 2);
  EXPECT_DOUBLE_EQ(ledger.next_settle_s(), 6) << "active from 2 s: settles 4 s later";
  ledger.observe_peak(1, 3 * kGiB, 3);
  EXPECT_DOUBLE_EQ(ledger.next_settle_s(), 7) << "its memory grew at 3 s: still setting up";
  EXPECT_TRUE(ledger.settle(6.9).empty());
  EXPECT_EQ(ledger.settle(7).size(), 1u);
}

TEST(GpuLedger, JobsOfKnownShareMayJoinASettlingGpuAndAreNotCountedInItsRise) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.observe(0, 0, 0.0, std::nullopt);
  ledger.place(request(1, 4), {0}, 0);
  auto view = ledger.views(0)[0];
  EXPECT_FALSE(common_rules(request(2, 4), view)) << "unknown share: waits";
  EXPECT_TRUE(common_rules(request(2, 4, 0.3), view)) << "known share: may join";
  ledger.place(request(2, 4, 0.3), {0}, 1);
  for (double t = 5; t <= 8; t += 1) ledger.observe(0, t, 0.5, std::nullopt);
  auto measured = ledger.settle(8);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_NEAR(measured[0].share, 0.2, 1e-9) << "0.5 rise less job 2's known 0.3";
}

TEST(GpuLedger, AShortJobIsMeasuredAsItEnds) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.observe(0, 0, 0.0, std::nullopt);
  ledger.place(request(1, 4), {0}, 0);
  ledger.observe_peak(1, kGiB, 1);
  ledger.observe(0, 2, 0.3, std::nullopt);
  ledger.observe(0, 3, 0.3, std::nullopt);
  auto measured = ledger.remove(1, 3);
  ASSERT_TRUE(measured.has_value()) << "active 2 s of a 4 s window: enough to measure";
  EXPECT_NEAR(measured->share, 0.3, 1e-9);
  ledger.place(request(2, 4), {0}, 3);
  EXPECT_FALSE(ledger.remove(2, 3.5).has_value()) << "never active: nothing measured";
}

TEST(GpuLedger, AGpuWhoseActivityStopsGrowingClosesUntilAJobLeaves) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 4, 0.6), {0}, 0);
  for (double t = 1; t <= 10; t += 1) ledger.observe(0, t, 0.6, std::nullopt);
  ledger.place(request(2, 4), {0}, 10);
  for (double t = 11; t <= 18; t += 1) ledger.observe(0, t, 0.61, std::nullopt);
  auto measured = ledger.settle(18);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_TRUE(measured[0].saturated);
  EXPECT_NE(ledger.views(18)[0].closed_reason.find("stopped growing"), std::string::npos);
  ledger.remove(1, 18);
  EXPECT_EQ(ledger.views(18)[0].closed_reason, "") << "a job left: the GPU may take another";
}

TEST(GpuLedger, AMultiGpuJobCountsOnEachOfItsGpus) {
  GpuLedger ledger({80 * kGiB, 80 * kGiB, 80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 30, 0.5, 2), {0, 2}, 0);
  auto views = ledger.views(0);
  EXPECT_EQ(views[0].jobs, 1);
  EXPECT_EQ(views[1].jobs, 0);
  EXPECT_EQ(views[2].mem_free_bytes, 49 * kGiB);
  ledger.remove(1, 0);
  EXPECT_EQ(ledger.views(0)[2].jobs, 0);
}

TEST(GpuLedger, ExclusiveModeHoldsABusyGpu) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kExclusive, thresholds());
  ledger.place(request(1, 4), {0}, 0);
  EXPECT_TRUE(ledger.views(0)[0].held_exclusively);
  EXPECT_EQ(ledger.views(0)[0].closed_reason, "") << "nothing settles when nothing can join";
}

TEST(GpuLedger, AJobThatReportsProgressIsMeasuredFromItsFirstReportNotItsStartUp) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, sharing_thresholds());
  ledger.place(request(1, 4, 0.2), {0}, 0);  // a neighbour already training
  for (double t = 0; t <= 4; t += 1) ledger.observe(0, t, 0.2, std::nullopt);
  ledger.place(request(2, 4), {0}, 4);
  ledger.observe_peak(2, kGiB, 5);  // its CUDA context: start-up
  for (double t = 5; t <= 12; t += 1) ledger.observe(0, t, 0.22, std::nullopt);
  ledger.observe_peak(2, 6 * kGiB, 12);  // it builds its model
  for (double t = 13; t <= 15; t += 1) ledger.observe(0, t, 0.22, std::nullopt);
  ledger.started_training(2, 15);
  for (double t = 16; t <= 19; t += 1) ledger.observe(0, t, 0.6, std::nullopt);
  EXPECT_TRUE(ledger.settle(18.9).empty()) << "1 s of warm-up and 3 s of training are not over";
  auto measured = ledger.settle(19);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_NEAR(measured[0].share, 0.38, 1e-9) << "0.6 while training against 0.22 just before; the neighbour "
                                             << "began long before that baseline";
}

TEST(GpuLedger, AJobThatReportsNoProgressSettlesOnceItsMemoryHasBeenQuietLongEnough) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, sharing_thresholds());
  ledger.place(request(1, 4), {0}, 0);
  ledger.observe_peak(1, kGiB, 1);
  ledger.observe_peak(1, 5 * kGiB, 4);
  EXPECT_DOUBLE_EQ(ledger.next_settle_s(), 13) << "quiet 9 s after its last growth";
}

TEST(GpuLedger, TwoJobsSettlingTogetherShareTheRiseTheyCausedAndAThirdWaits) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, sharing_thresholds());
  ledger.observe(0, 0, 0.0, std::nullopt);
  ledger.place(request(1, 4), {0}, 0);
  EXPECT_EQ(ledger.views(0)[0].settling_reason, "") << "one of two settling places taken: another may join";
  ledger.place(request(2, 4), {0}, 0);
  EXPECT_NE(ledger.views(0)[0].settling_reason.find("2 jobs settling"), std::string::npos);
  EXPECT_FALSE(common_rules(request(3, 4), ledger.views(0)[0])) << "a third of unknown share waits";
  EXPECT_TRUE(common_rules(request(3, 4, 0.2), ledger.views(0)[0])) << "one of known share may join";
  for (double t = 1; t <= 10; t += 1) ledger.observe(0, t, 0.0, std::nullopt);
  ledger.started_training(1, 10);
  ledger.started_training(2, 10);
  for (double t = 11; t <= 14; t += 1) ledger.observe(0, t, 0.6, std::nullopt);
  auto measured = ledger.settle(14);
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_NEAR(measured[0].share, 0.3, 1e-9) << "both began training at once: the 0.6 rise is split";
  EXPECT_NEAR(measured[1].share, 0.3, 1e-9) << "job 1, settled by now, still rose with job 2";
  EXPECT_EQ(measured[0].settled_with, std::vector<int64_t>{2});
  EXPECT_EQ(measured[1].settled_with, std::vector<int64_t>{1});
}

TEST(GpuLedger, AProvisionalJobReservesWhatItWasGivenUntilItsPeakIsMeasuredThenThatPeakPlusATenth) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, sharing_thresholds());
  ledger.place(request(1, 9, 0.3), {0}, 0);  // reserves 10 GiB with the margin
  JobRequest job = provisional(2);
  job.mem_bytes = provisional_reservation(ledger.view(0, 0), sharing_thresholds());
  EXPECT_EQ(*job.mem_bytes, 69 * kGiB) << "70 GiB free less the margin";
  ledger.place(job, {0}, 0);
  EXPECT_EQ(ledger.view(0, 0).mem_free_bytes, 0);
  ledger.observe_peak(2, 2 * kGiB, 1);
  ledger.observe_peak(2, 8 * kGiB, 5);
  EXPECT_TRUE(ledger.measure_provisional(13).empty()) << "without progress reports: 9 s quiet after 5 s";
  ledger.started_training(2, 6);
  EXPECT_TRUE(ledger.measure_provisional(8.9).empty());
  auto measured = ledger.measure_provisional(9);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[0].peak_bytes, 8 * kGiB);
  EXPECT_EQ(ledger.view(0, 9).mem_free_bytes, 80 * kGiB - 10 * kGiB - (8 * kGiB + 8 * kGiB / 10) - kGiB);
  EXPECT_TRUE(ledger.measure_provisional(20).empty()) << "measured once";
}

TEST(GpuLedger, AProvisionalJobJoinsABusyGpuOnlyWithRoomAndAJobOfUnknownMemoryOtherwiseOnlyAnEmptyOne) {
  Thresholds t = sharing_thresholds();
  t.min_provisional_bytes = 4 * kGiB;
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, t);
  ledger.place(request(1, 70, 0.3), {0}, 0);  // 71 GiB reserved, 9 GiB free
  JobRequest opaque{2, std::nullopt, 0.1, false, 0, 1};
  EXPECT_EQ(collocation_thresholds(opaque, ledger.view(0, 0), t).why, Fit::Why::kMemoryUnknown);
  EXPECT_TRUE(collocation_thresholds(provisional(2), ledger.view(0, 0), t));
  ledger.place(request(3, 5, 0.1), {0}, 0);  // 6 GiB more: 3 GiB free
  Fit full = collocation_thresholds(provisional(2), ledger.view(0, 0), t);
  EXPECT_EQ(full.why, Fit::Why::kProvisional);
  EXPECT_NE(full.reason().find("at least 4.0 GiB free"), std::string::npos) << full.reason();
}

TEST(GpuLedger, UnderMpsAGpuOverTheCeilingTakesOneMoreJobWhileEachItTookAddedWork) {
  Thresholds t = sharing_thresholds();
  t.max_sm_activity = 0.8;
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, t);
  for (double s = 0; s <= 10; s += 1) ledger.observe(0, s, 0.0, std::nullopt);
  ledger.place(request(1, 8), {0}, 10);
  ledger.started_training(1, 10);
  for (double s = 11; s <= 14; s += 1) ledger.observe(0, s, 0.85, std::nullopt);
  ASSERT_EQ(ledger.settle(14).size(), 1u);
  GpuView busy = ledger.view(0, 14);
  EXPECT_GT(busy.sm_activity, 0.8);
  EXPECT_TRUE(busy.grows_past_ceiling) << "its last job added 0.85";
  EXPECT_TRUE(collocation_thresholds(request(2, 8), busy, t)) << "an unknown share, measured as it joins";
  EXPECT_TRUE(collocation_thresholds(request(2, 8, 0.3), busy, t)) << "a known share too, judged as it joins";
  ledger.place(request(2, 8), {0}, 14);
  EXPECT_FALSE(ledger.view(0, 14).grows_past_ceiling) << "one at a time: job 2 settles first";
  ledger.started_training(2, 20);
  for (double s = 15; s <= 24; s += 1) ledger.observe(0, s, 0.86, std::nullopt);
  auto measured = ledger.settle(24);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_TRUE(measured[0].saturated) << "it added 0.01";
  EXPECT_FALSE(ledger.view(0, 24).grows_past_ceiling);
  EXPECT_FALSE(collocation_thresholds(request(3, 8), ledger.view(0, 24), t));
}

TEST(GpuLedger, UnderMpsAKnownShareThatJoinsPastTheCeilingIsJudgedByTheRiseItBrings) {
  Thresholds t = sharing_thresholds();
  t.max_sm_activity = 0.8;
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, t);
  ledger.place(request(1, 8, 0.85), {0}, 0);
  ledger.started_training(1, 0);
  for (double s = 0; s <= 10; s += 0.5) ledger.observe(0, s, 0.85, std::nullopt);
  ledger.place(request(2, 8, 0.3), {0}, 10);
  EXPECT_TRUE(ledger.jobs().at(2).judged);
  EXPECT_FALSE(ledger.view(0, 10).grows_past_ceiling) << "one newcomer at a time";
  EXPECT_FALSE(collocation_thresholds(request(3, 8, 0.3), ledger.view(0, 10), t));
  ledger.started_training(2, 12);
  for (double s = 12.5; s <= 16; s += 0.5) ledger.observe(0, s, 0.95, std::nullopt);
  EXPECT_TRUE(ledger.settle(16).empty()) << "its share is known: nothing is measured or learned";
  std::vector<JudgedJoin> judged = ledger.take_judged();
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].id, 2);
  EXPECT_NEAR(judged[0].rise, 0.10, 1e-9);
  EXPECT_FALSE(judged[0].closed);
  EXPECT_TRUE(ledger.take_judged().empty()) << "taken once";
  EXPECT_FALSE(ledger.jobs().at(2).judged);
  EXPECT_DOUBLE_EQ(ledger.jobs().at(2).sm_share, 0.3);
  EXPECT_TRUE(ledger.view(0, 16).grows_past_ceiling) << "it added 0.10";
  ledger.place(request(3, 8, 0.3), {0}, 16);
  ledger.started_training(3, 16);
  for (double s = 16.5; s <= 20; s += 0.5) ledger.observe(0, s, 0.96, std::nullopt);
  ledger.settle(20);
  judged = ledger.take_judged();
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_TRUE(judged[0].closed);
  const std::string closed = ledger.view(0, 20).closed_reason;
  EXPECT_NE(closed.find("job 3, of known share 0.30, added 0.01"), std::string::npos) << closed;
  EXPECT_FALSE(collocation_thresholds(request(4, 8), ledger.view(0, 20), t)) << "nor one of unknown share";
  ledger.remove(1, 21);
  EXPECT_TRUE(ledger.view(0, 21).closed_reason.empty()) << "a job left: room again";

  GpuLedger unread({80 * kGiB}, CollocationMode::kMps, t);
  unread.place(request(1, 8, 0.85), {0}, 0);
  unread.started_training(1, 0);
  EXPECT_FALSE(unread.view(0, 10).grows_past_ceiling) << "no activity reading: its rise could not be read";
  EXPECT_FALSE(collocation_thresholds(request(2, 8, 0.3), unread.view(0, 10), t));

  GpuLedger within({80 * kGiB}, CollocationMode::kMps, t);
  within.place(request(1, 8, 0.5), {0}, 0);
  within.started_training(1, 0);
  within.place(request(2, 8, 0.3), {0}, 1);
  EXPECT_FALSE(within.jobs().at(2).judged) << "within the ceiling its known share is counted, not judged";
}

TEST(GpuLedger, NoProvisionalJobJoinsAnotherNotYetMeasured) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, sharing_thresholds());
  JobRequest first = provisional(1);
  first.mem_bytes = 60 * kGiB;  // given less than all, so that room is left
  ledger.place(first, {0}, 0);
  GpuView view = ledger.view(0, 0);  // the refusal's text lives in the view
  Fit fit = collocation_thresholds(provisional(2), view, sharing_thresholds());
  EXPECT_EQ(fit.why, Fit::Why::kGpuSays);
  EXPECT_NE(fit.reason().find("job 1 of unknown memory is not yet measured"), std::string::npos) << fit.reason();
  EXPECT_TRUE(collocation_thresholds(request(3, 4, 0.1), ledger.view(0, 0), sharing_thresholds()))
      << "a job of known memory may use the room left";
}

TEST(GpuLedger, AProvisionalJobsPeakIsNeverBelowTheMemoryTheGpuShowsAndNoOtherJobAccountsFor) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, sharing_thresholds());
  ledger.place(request(1, 9, 0.3), {0}, 0);
  ledger.observe_peak(1, 10 * kGiB, 0);
  JobRequest job = provisional(2);
  job.mem_bytes = 68 * kGiB;
  ledger.place(job, {0}, 0);
  ledger.observe_peak(2, kGiB / 2, 1);        // the process list shows only its context
  ledger.observe(0, 1, 0.5, 64 * kGiB);       // but the GPU has 16 GiB in use
  ledger.started_training(2, 2);
  auto measured = ledger.measure_provisional(5);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[0].peak_bytes, 6 * kGiB) << "16 GiB in use less job 1's 10";
}

// Job 1 keeps the GPU 0.8 busy alone; job 2 joins and trains. The GPU can
// only rise to 0.95, and job 1 falls from 100 to 60 samples/s: job 2 took
// 0.15 plus the 0.8 x 0.4 job 1 lost, at 0.6 of its own speed alone.
double share_beside_a_busy_neighbour(bool neighbour_reports_rates) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 10, 0.8), {0}, 0);
  if (neighbour_reports_rates) ledger.observe_rate(1, 100);
  for (double t = 0; t <= 10; t += 0.5) ledger.observe(0, t, 0.8, 70 * kGiB);
  ledger.place(request(2, 10, 0.0), {0}, 10);
  ledger.started_training(2, 10);
  if (neighbour_reports_rates) ledger.observe_rate(1, 60);
  std::vector<MeasuredShare> measured;
  for (double t = 10.5; t <= 20 && measured.empty(); t += 0.5) {
    ledger.observe(0, t, 0.95, 60 * kGiB);
    measured = ledger.settle(t);
  }
  EXPECT_EQ(measured.size(), 1u);
  if (measured.empty()) return -1;
  EXPECT_NEAR(measured[0].rise, 0.15, 1e-6);
  return measured[0].share;
}

TEST(GpuLedger, ASharePlusWhatItsNeighboursLostIsWhatAJobUsesAloneOnABusyGpu) {
  EXPECT_NEAR(share_beside_a_busy_neighbour(true), (0.15 + 0.8 * 0.4) / 0.6, 1e-6);
  EXPECT_NEAR(share_beside_a_busy_neighbour(false), 0.15, 1e-6) << "no rates: only the rise is seen";
}

// Job 1 trains at 100 samples/s with the GPU 0.8 busy; job 2 begins to
// train at 10, and from then job 1 does 80 samples/s. The rate job 1 last
// reported (a mean over a window that began before job 2 trained) still
// says 90: its work, read at job 2's baseline and at its settling, says 80.
double share_read_from_work(bool neighbour_reports_work) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 10, 0.8), {0}, 0);
  ledger.observe_rate(1, 100);
  if (neighbour_reports_work) ledger.observe_work(1, {1000, 10});
  for (double t = 0; t <= 10; t += 0.5) ledger.observe(0, t, 0.8, 70 * kGiB);
  ledger.place(request(2, 10, 0.0), {0}, 10);
  ledger.started_training(2, 10);
  std::vector<MeasuredShare> measured;
  for (double t = 10.5; t <= 20 && measured.empty(); t += 0.5) {
    ledger.observe_rate(1, 90);
    if (neighbour_reports_work) ledger.observe_work(1, {1000 + 80 * (t - 10), t});
    ledger.observe(0, t, 0.9, 60 * kGiB);
    measured = ledger.settle(t);
  }
  EXPECT_EQ(measured.size(), 1u);
  return measured.empty() ? -1 : measured[0].share;
}

TEST(GpuLedger, ANeighboursRateWhileAJobSettlesIsReadFromItsWorkOverExactlyThatStretch) {
  EXPECT_NEAR(share_read_from_work(true), (0.1 + 0.8 * 0.2) / 0.8, 1e-6);
  EXPECT_NEAR(share_read_from_work(false), (0.1 + 0.8 * 0.1) / 0.9, 1e-6) << "no work: its last rate";
}

// Job 1 keeps the GPU 0.9 busy at 100 samples/s; job 2 (unknown share)
// begins to train, then job 3 of known share 0.8 joins. The GPU reaches 1.0
// and job 1 falls to 50 samples/s. Job 3 could add at most the 0.1 left, so
// job 2's rise is 0, not 0.1 - 0.8: it took its part of what job 1 lost.
TEST(GpuLedger, AJobOfKnownShareJoiningASettlingJobAddsNoMoreThanTheGpuHadLeft) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 10, 0.9), {0}, 0);
  ledger.observe_rate(1, 100);
  for (double t = 0; t <= 10; t += 0.5) ledger.observe(0, t, 0.9, 70 * kGiB);
  ledger.place(request(2, 10, 0.0), {0}, 10);
  ledger.started_training(2, 10);
  ledger.place(request(3, 10, 0.8), {0}, 11);
  ledger.observe_rate(1, 50);
  std::vector<MeasuredShare> measured;
  for (double t = 10.5; t <= 20 && measured.empty(); t += 0.5) {
    ledger.observe(0, t, 1.0, 50 * kGiB);
    measured = ledger.settle(t);
  }
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_NEAR(measured[0].rise, 0.0, 1e-6);
  EXPECT_NEAR(measured[0].share, 0.9 * 0.5 / 0.5, 1e-6) << "job 1's demand 0.9 x its loss 0.5, over job 2's 0.5";
}

// Every job on a full GPU runs at (1 / the demand) of its speed alone.
// Job 1 settles alone at 0.9 and 10 samples/s. Job 2's share is known as
// 0.3 (an earlier job of its command was measured low) but it uses 0.9:
// with both on the GPU, job 1 runs at 1/1.8 of alone (or at
// `job1_speed_beside_job2`). Job 3, which uses 0.45 alone, joins: the
// demand becomes 2.25 and job 1 and job 2 lose a fifth of their rates.
// Returns job 3's measured share.
double share_on_a_full_gpu_read_from_speeds(bool job1_reports_rates, double job1_speed_beside_job2 = 1 / 1.8) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  for (double t = -2; t < 0; t += 0.5) ledger.observe(0, t, 0.0, 80 * kGiB);
  ledger.place(request(1, 10), {0}, 0);
  ledger.started_training(1, 0);
  std::vector<MeasuredShare> measured;
  for (double t = 0.5; t <= 10 && measured.empty(); t += 0.5) {
    if (job1_reports_rates) ledger.observe_rate(1, 10);
    ledger.observe(0, t, 0.9, 70 * kGiB);
    measured = ledger.settle(t);
  }
  EXPECT_EQ(measured.size(), 1u);
  EXPECT_NEAR(measured.empty() ? 0 : measured[0].share, 0.9, 1e-6);
  ledger.place(request(2, 10, 0.3), {0}, 10);
  for (double t = 10; t <= 20; t += 0.5) {
    if (job1_reports_rates) ledger.observe_rate(1, 10 * job1_speed_beside_job2);
    ledger.observe_rate(2, 8);
    ledger.observe(0, t, 1.0, 60 * kGiB);
  }
  ledger.place(request(3, 10), {0}, 20);
  ledger.started_training(3, 20);
  measured.clear();
  for (double t = 20.5; t <= 30 && measured.empty(); t += 0.5) {
    if (job1_reports_rates) ledger.observe_rate(1, 10 * job1_speed_beside_job2 * 0.8);
    ledger.observe_rate(2, 8 * 0.8);
    ledger.observe(0, t, 1.0, 50 * kGiB);
    measured = ledger.settle(t);
  }
  EXPECT_EQ(measured.size(), 1u);
  return measured.empty() ? -1 : measured[0].share;
}

TEST(GpuLedger, AFullGpusDemandIsReadFromItsJobsSpeedsNotFromTheSharesRecordedForThem) {
  EXPECT_NEAR(share_on_a_full_gpu_read_from_speeds(true), 1.8 * 0.2 / 0.8, 1e-6)
      << "job 1 ran at 1/1.8 of alone: the GPU's 1.0 was a demand of 1.8";
  EXPECT_NEAR(share_on_a_full_gpu_read_from_speeds(false), (0.9 + 0.3) * 0.2 / 0.8, 1e-6)
      << "no solo rate known: the shares recorded, 0.9 and 0.3";
  EXPECT_NEAR(share_on_a_full_gpu_read_from_speeds(true, 0.1), 2.0 * 0.2 / 0.8, 1e-6)
      << "a speed of 0.1 reads as a demand of 10: two neighbours ask at most two GPUs";
}

// Job 1 (share 0.9, or 0.3) trains at 100 samples/s; job 2 joins and
// trains. The GPU's activity does not move, and job 1 keeps `rate_after`.
MeasuredShare joining_without_a_trace(double activity, double rate_after) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.place(request(1, 10, activity), {0}, 0);
  ledger.observe_rate(1, 100);
  for (double t = 0; t <= 10; t += 0.5) ledger.observe(0, t, activity, 70 * kGiB);
  ledger.place(request(2, 10, 0.0), {0}, 10);
  ledger.started_training(2, 10);
  ledger.observe_rate(1, rate_after);
  std::vector<MeasuredShare> measured;
  for (double t = 10.5; t <= 20 && measured.empty(); t += 0.5) {
    ledger.observe(0, t, activity, 60 * kGiB);
    measured = ledger.settle(t);
  }
  EXPECT_EQ(measured.size(), 1u);
  return measured.empty() ? MeasuredShare{} : measured[0];
}

TEST(GpuLedger, UnderMpsAKnownShareCountsOnceItsJobTrainsAndAtMostThreeStartAtOnce) {
  Thresholds t = sharing_thresholds();
  t.max_settling_per_gpu = 3;
  t.count_shares_once_training = true;
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, t);
  ledger.place(request(1, 10, 0.7), {0}, 0);
  EXPECT_DOUBLE_EQ(ledger.view(0, 1).sm_activity, 0) << "starting up: it uses no SM time yet";
  EXPECT_FALSE(ledger.steady(0)) << "its share will count";
  ledger.started_training(1, 2);
  EXPECT_DOUBLE_EQ(ledger.view(0, 2).sm_activity, 0.7);
  ledger.place(request(2, 10, 0.5), {0}, 3);
  ledger.place(request(3, 10, 0.5), {0}, 3);
  EXPECT_TRUE(ledger.view(0, 4).closed_reason.empty());
  ledger.place(request(4, 10, 0.5), {0}, 3);
  EXPECT_EQ(ledger.view(0, 4).closed_reason, "3 jobs starting up (their SM shares count once they train)");
  ledger.observe_peak(2, kGiB, 4);  // reports no progress: counts once its memory is quiet for settle_quiet_s
  EXPECT_EQ(ledger.view(0, 12.9).closed_reason, "3 jobs starting up (their SM shares count once they train)");
  EXPECT_TRUE(ledger.view(0, 13.1).closed_reason.empty());
  EXPECT_DOUBLE_EQ(ledger.view(0, 13.1).sm_activity, 1.0) << "0.7 + 0.5, capped";

  GpuLedger shared({80 * kGiB}, CollocationMode::kShared, t);
  shared.place(request(1, 10, 0.9), {0}, 0);
  EXPECT_DOUBLE_EQ(shared.view(0, 1).sm_activity, 0.9) << "time-sliced: counted from launch";
}

TEST(GpuLedger, UnderMpsJobsStartingUpAndJobsSettlingAreThreeAtMostTogether) {
  Thresholds t = sharing_thresholds();
  t.max_settling_per_gpu = 3;
  t.count_shares_once_training = true;
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, t);
  ledger.place(request(1, 10, 0), {0}, 0);  // unknown: settles
  ledger.place(request(2, 10, 0), {0}, 0);
  EXPECT_TRUE(ledger.view(0, 1).closed_reason.empty()) << "two settling: room for a third newcomer";
  ledger.place(request(3, 10, 0.3), {0}, 0);  // predicted 0.3: counts once it trains
  EXPECT_EQ(ledger.view(0, 1).closed_reason,
            "1 jobs starting up (their SM shares count once they train) and 2 settling")
      << "three newcomers whose SM use the GPU does not show yet";
  ledger.started_training(3, 2);
  EXPECT_TRUE(ledger.view(0, 2).closed_reason.empty()) << "its share counts now: the GPU shows it";
}

TEST(GpuLedger, UnderMpsThreeSettlingJobsKeepAJobOfKnownShareOffUntilOneSettles) {
  Thresholds t = sharing_thresholds();
  t.max_settling_per_gpu = 3;
  t.count_shares_once_training = true;
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, t);
  for (int64_t id = 1; id <= 3; ++id) ledger.place(request(id, 10, 0), {0}, 0);
  EXPECT_EQ(ledger.view(0, 1).closed_reason,
            "3 jobs settling (a newcomer's SM share would count only once it trains)")
      << "a job predicted at 0.3 would be a fourth newcomer the GPU does not show yet";
  t.count_shares_once_training = false;
  GpuLedger counted_at_once({80 * kGiB}, CollocationMode::kMps, t);
  for (int64_t id = 1; id <= 3; ++id) counted_at_once.place(request(id, 10, 0), {0}, 0);
  EXPECT_TRUE(counted_at_once.view(0, 1).closed_reason.empty()) << "a known share counts from its start";
  EXPECT_FALSE(counted_at_once.view(0, 1).settling_reason.empty()) << "no fourth job of unknown share";
}

TEST(GpuLedger, AJobThatLeavesNoTraceOnAFullGpuIsNotSeenButOneOnAGpuWithRoomIsSeenToUseLittle) {
  MeasuredShare full = joining_without_a_trace(0.95, 100);
  EXPECT_FALSE(full.seen) << "no rise on a full GPU and no neighbour slowed: it could use anything";
  EXPECT_TRUE(joining_without_a_trace(0.3, 100).seen) << "room to rise and none: it uses little";
  MeasuredShare slowed = joining_without_a_trace(0.95, 80);
  EXPECT_TRUE(slowed.seen) << "its neighbour lost a fifth of its rate";
  EXPECT_NEAR(slowed.share, 0.95 * 0.2 / 0.8, 1e-6);
}

// Job 1 trains from 0 on an idle GPU and keeps it 0.8 busy; job 2 is
// launched at 4, a second before job 1's window (1-5) ends.
double share_with_a_late_neighbour(bool neighbour_shows_memory) {
  GpuLedger ledger({80 * kGiB}, CollocationMode::kMps, thresholds());
  ledger.observe(0, -1, 0.0, std::nullopt);
  ledger.place(request(1, 4), {0}, -0.5);
  ledger.started_training(1, 0);
  for (double t = 0.5; t < 4; t += 0.5) ledger.observe(0, t, 0.8, std::nullopt);
  ledger.place(request(2, 4), {0}, 4);
  if (neighbour_shows_memory) ledger.observe_peak(2, kGiB, 4);
  std::vector<MeasuredShare> measured;
  for (double t = 4; t <= 5 && measured.empty(); t += 0.5) {
    ledger.observe(0, t, 0.8, std::nullopt);
    measured = ledger.settle(t);
  }
  EXPECT_EQ(measured.size(), 1u);
  return measured.empty() ? -1 : measured[0].share;
}

TEST(GpuLedger, ANeighbourLaunchedLateSharesTheRiseOnlyForItsPartOfTheWindow) {
  EXPECT_NEAR(share_with_a_late_neighbour(false), 0.8, 1e-6) << "no memory yet: no kernel of it ran";
  EXPECT_NEAR(share_with_a_late_neighbour(true), 0.8 / 1.25, 1e-6) << "on the GPU for 1 s of the 4 s window";
}

}  // namespace
}  // namespace colo::sched
