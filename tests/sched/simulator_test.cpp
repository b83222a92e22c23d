#include "colo/sched/simulator.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace colo::sched {
namespace {

using testing::kGiB;

TraceJob job(double submit, const std::string& name, double duration, int64_t mem_gib, double sm,
             std::optional<int64_t> estimate_gib = std::nullopt) {
  TraceJob j;
  j.submit_s = submit;
  j.name = name;
  j.duration_s = duration;
  j.mem_bytes = mem_gib * kGiB;
  j.sm_activity = sm;
  j.mem_estimate_bytes = estimate_gib ? std::optional<int64_t>(*estimate_gib * kGiB) : std::optional<int64_t>(mem_gib * kGiB);
  return j;
}

SimulationOptions options(int gpus, const std::string& policy, CollocationMode mode) {
  SimulationOptions o;
  o.gpus = gpus;
  o.policy = policy;
  o.mode = mode;
  o.gpu.idle_power_w = 100;
  o.gpu.busy_floor_power_w = 100;
  o.gpu.max_power_w = 500;
  return o;
}

TEST(Simulator, JobsOfUnknownMemoryShareAGpuProvisionallyAsTheRunnerStartsThem) {
  // Four 100 s jobs of 10 GiB that no one estimated, on one 80 GiB GPU, each
  // keeping a fifth of it busy. Only on an empty GPU, they run one after
  // another; provisionally, each joins once the one before it is measured
  // (settle_active_s after it starts), and none dies: 10 GiB fit.
  std::vector<TraceJob> trace;
  for (const char* name : {"a", "b", "c", "d"}) {
    trace.push_back(job(0, name, 100, 10, 0.2));
    trace.back().mem_estimate_bytes.reset();
    trace.back().command = std::string("python3 train.py --job ") + name;
  }
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  auto alone = simulate(trace, o);
  EXPECT_NEAR(alone.total_s, 400, 1) << "one at a time";
  o.provisional_memory = true;
  auto shared = simulate(trace, o);
  EXPECT_LT(shared.total_s, 130) << "side by side, each joining a few seconds after the last";
  EXPECT_GT(shared.jobs[3].start_s, shared.jobs[2].start_s) << "one unmeasured provisional job per GPU at a time";
  EXPECT_EQ(shared.oom_events, 0);
  o.mode = CollocationMode::kExclusive;
  o.policy = "exclusive";
  EXPECT_NEAR(simulate(trace, o).total_s, 400, 1) << "no provisional start where GPUs are not shared";
}

TEST(Simulator, AMultiGpuJobStaysOnOneNode) {
  // Two nodes of two GPUs. A (GPU 0) and C (GPU 2) run 100 s; B (GPU 1) ends
  // at 10, leaving GPUs 1 and 3 free, but on different nodes: the 2-GPU job
  // D waits until A ends and node 0 is free.
  std::vector<TraceJob> trace{job(0, "A", 100, 4, 0.5), job(0, "B", 10, 4, 0.5), job(0, "C", 100, 4, 0.5),
                              job(5, "D", 10, 4, 0.5)};
  trace[3].gpus = 2;
  auto o = options(4, "exclusive", CollocationMode::kExclusive);
  o.gpus_per_node = 2;
  auto r = simulate(trace, o);
  EXPECT_DOUBLE_EQ(r.jobs[3].start_s, 100);
  EXPECT_EQ(r.jobs[3].gpu, 0);
  o.gpus_per_node = 0;  // one node: D takes GPUs 1 and 3 as soon as B ends
  EXPECT_DOUBLE_EQ(simulate(trace, o).jobs[3].start_s, 10);
  o.gpus_per_node = 1;
  EXPECT_THROW(simulate(trace, o), std::invalid_argument);
}

TEST(Simulator, ReproducesAHandComputedExclusiveSchedule) {
  // Two GPUs, one job each. A and B start at 0; C (t=10) waits for B (ends
  // 50) and runs 50-80; D (t=20) follows on GPU 1, 80-90; A ends at 100.
  std::vector<TraceJob> trace{job(0, "A", 100, 4, 0.5), job(0, "B", 50, 4, 0.5), job(10, "C", 30, 4, 0.5),
                              job(20, "D", 10, 4, 0.5)};
  auto r = simulate(trace, options(2, "exclusive", CollocationMode::kExclusive));
  ASSERT_EQ(r.jobs.size(), 4u);
  EXPECT_DOUBLE_EQ(r.jobs[0].start_s, 0);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_s, 100);
  EXPECT_EQ(r.jobs[1].gpu, 1);
  EXPECT_DOUBLE_EQ(r.jobs[2].start_s, 50);
  EXPECT_DOUBLE_EQ(r.jobs[2].end_s, 80);
  EXPECT_DOUBLE_EQ(r.jobs[3].start_s, 80);
  EXPECT_DOUBLE_EQ(r.jobs[3].end_s, 90);
  EXPECT_DOUBLE_EQ(r.total_s, 100);
  // Busy GPUs draw 300 W: GPU 0 busy 100 s; GPU 1 busy 90 s, idle 10 s at 100 W.
  EXPECT_NEAR(r.energy_j, 300 * 100 + 300 * 90 + 100 * 10, 1e-6);
  EXPECT_NEAR(r.mean_wait_s, (0 + 0 + 40 + 60) / 4.0, 1e-9);
  EXPECT_EQ(r.jobs_lost, 0);
}

TEST(Simulator, MpsRunsJobsSideBySideAndSlowsThemPastFullActivity) {
  // Two jobs with SM activity 0.8 share one GPU: together 1.6, so each runs
  // at 1/1.6 of its solo speed and both finish at 160 s instead of 100.
  std::vector<TraceJob> trace{job(0, "A", 100, 10, 0.8), job(0, "B", 100, 10, 0.8)};
  SimulationOptions o = options(1, "magm", CollocationMode::kMps);
  o.thresholds.max_sm_activity = 0.9;
  auto r = simulate(trace, o);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 0);
  EXPECT_NEAR(r.jobs[0].end_s, 160, 1e-9);
  EXPECT_NEAR(r.total_s, 160, 1e-9);
  EXPECT_NEAR(r.energy_j, 500 * 160, 1e-6);
  EXPECT_NEAR(r.jobs[0].energy_j, 250 * 160, 1e-6) << "equal SM shares split the energy evenly";
}

TEST(Simulator, CollocationBeatsExclusiveOnSmallJobs) {
  std::vector<TraceJob> trace;
  for (int i = 0; i < 8; ++i) trace.push_back(job(0, std::to_string(i), 100, 4, 0.25));
  auto exclusive = simulate(trace, options(2, "exclusive", CollocationMode::kExclusive));
  auto packed = simulate(trace, options(2, "magm", CollocationMode::kMps));
  EXPECT_DOUBLE_EQ(exclusive.total_s, 400);
  EXPECT_DOUBLE_EQ(packed.total_s, 100);
  EXPECT_LT(packed.energy_j, exclusive.energy_j);
}

TEST(Simulator, UnderestimatedJobDiesOfOomAndIsRecoveredAlone) {
  // B claims 10 GiB but needs 70; next to A's 20 GiB it cannot fit, dies
  // 5 s in, and under RAD-RM's rule reruns alone once A is done (t=100).
  std::vector<TraceJob> trace{job(0, "A", 100, 20, 0.3), job(1, "B", 50, 70, 0.3, 10)};
  auto r = simulate(trace, options(1, "magm", CollocationMode::kMps));
  EXPECT_EQ(r.oom_events, 1);
  EXPECT_EQ(r.oom_unrecovered, 0);
  EXPECT_EQ(r.jobs[1].state, JobState::kCompleted);
  EXPECT_EQ(r.jobs[1].attempts, 2);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 100);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_s, 150);
  EXPECT_DOUBLE_EQ(r.jobs[0].end_s, 100) << "its neighbour keeps running";
}

TEST(Simulator, RecoveryQueueIsServedBeforeTheNormalQueue) {
  // C (submitted at 2, before B's retry) must still start after B's retry.
  std::vector<TraceJob> trace{job(0, "A", 100, 20, 0.3), job(1, "B", 50, 70, 0.3, 10),
                              job(2, "C", 10, 70, 0.3)};
  auto r = simulate(trace, options(1, "magm", CollocationMode::kMps));
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 100);
  EXPECT_DOUBLE_EQ(r.jobs[2].start_s, 150);
}

TEST(Simulator, JobLargerThanAnyGpuFailsAfterItsRetries) {
  std::vector<TraceJob> trace{job(0, "huge", 50, 100, 0.5, 10)};
  auto r = simulate(trace, options(1, "magm", CollocationMode::kMps));
  EXPECT_EQ(r.jobs[0].state, JobState::kFailed);
  EXPECT_EQ(r.oom_events, 4);  // first try and 3 retries
  EXPECT_EQ(r.oom_unrecovered, 1);
  EXPECT_EQ(r.jobs_lost, 0);
}

TEST(Simulator, PrioritiesOrderTheNormalQueue) {
  std::vector<TraceJob> trace{job(0, "A", 10, 4, 0.5), job(1, "low", 10, 4, 0.5), job(2, "high", 10, 4, 0.5)};
  trace[2].priority = 5;
  auto r = simulate(trace, options(1, "exclusive", CollocationMode::kExclusive));
  EXPECT_DOUBLE_EQ(r.jobs[2].start_s, 10);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 20);
}

// One 80 GiB GPU. A (50 GiB) runs 0-100; B (60 GiB, t=1) does not fit beside
// it; C (20 GiB, t=2, 200 s) does. Greedy backfilling starts C at 2, which
// keeps B out until C ends at 202. With a 0.5 s reservation B, having waited
// 1 s when C arrives, holds C back: B runs 100-200, then C 200-400.
TEST(Simulator, ReservationStopsSmallJobsFromStarvingALargeOne) {
  std::vector<TraceJob> trace{job(0, "A", 100, 50, 0.1), job(1, "B", 100, 60, 0.1), job(2, "C", 200, 20, 0.1)};
  auto greedy = simulate(trace, options(1, "magm", CollocationMode::kMps));
  EXPECT_DOUBLE_EQ(greedy.jobs[2].start_s, 2);
  EXPECT_DOUBLE_EQ(greedy.jobs[1].start_s, 202);

  SimulationOptions reserving = options(1, "magm", CollocationMode::kMps);
  reserving.backfill.reserve_after_s = 0.5;
  auto r = simulate(trace, reserving);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 100);
  EXPECT_DOUBLE_EQ(r.jobs[1].end_s, 200);
  EXPECT_DOUBLE_EQ(r.jobs[2].start_s, 200);
  EXPECT_DOUBLE_EQ(r.jobs[2].end_s, 400);
  EXPECT_EQ(r.jobs_lost, 0);

  // A reservation longer than B's wait changes nothing.
  reserving.backfill.reserve_after_s = 5;
  EXPECT_DOUBLE_EQ(simulate(trace, reserving).jobs[2].start_s, 2);
}

TEST(Simulator, AMultiGpuJobIsGangPlacedAndNotStarvedPastItsReservation) {
  // Two GPUs; a stream of one-GPU jobs (one every 5 s, 20 s each, too big to
  // share) keeps a GPU busy at every moment. The two-GPU job submitted at 1 s
  // would wait forever under pure greedy backfilling; it reserves after
  // multi_gpu_reserve_after_s.
  std::vector<TraceJob> trace;
  for (int i = 0; i < 40; ++i) trace.push_back(job(5.0 * i, "small-" + std::to_string(i), 20, 50, 0.3));
  TraceJob gang = job(1, "gang", 30, 50, 0.5);
  gang.gpus = 2;
  trace.push_back(gang);
  auto o = options(2, "magm", CollocationMode::kMps);
  o.backfill.multi_gpu_reserve_after_s = 30;
  auto r = simulate(trace, o);
  EXPECT_EQ(r.jobs_lost, 0);
  const SimulatedJob* g = nullptr;
  for (const auto& j : r.jobs) {
    if (j.name == "gang") g = &j;
  }
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->state, JobState::kCompleted);
  EXPECT_EQ(g->gpus, 2);
  EXPECT_LT(g->start_s - g->submit_s, 30 + 20 + 1e-6) << "waits at most the reservation plus one running job";
  // While it ran, no other job shared its GPUs (each small job needs 50 of 80 GiB).
  for (const auto& j : r.jobs) {
    if (&j == g) continue;
    bool overlaps = j.start_s < g->end_s && j.end_s > g->start_s;
    EXPECT_FALSE(overlaps) << j.name << " ran beside the gang job";
  }
  o.backfill.multi_gpu_reserve_after_s = 0;
  auto greedy = simulate(trace, o);
  for (const auto& j : greedy.jobs) {
    if (j.name == "gang") {
      EXPECT_GT(j.start_s, g->start_s) << "without the reservation it waits longer";
    }
  }
}

TEST(Simulator, AJobsStartUpUsesNoSmAndIsNotSlowedByItsNeighbours) {
  // Two jobs of 0.8 with 50 s of start-up in their 100 s alone: both start
  // up side by side (no SM activity, each at its own pace), then train
  // their 50 s at 1/1.6 of alone: 50 + 80 = 130 s, where a trace without
  // start-ups gives 160 s.
  std::vector<TraceJob> trace{job(0, "A", 100, 10, 0.8), job(0, "B", 100, 10, 0.8)};
  SimulationOptions o = options(1, "magm", CollocationMode::kMps);
  o.thresholds.max_sm_activity = 0.9;
  for (auto& j : trace) j.startup_s = 50;
  auto r = simulate(trace, o);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 0);
  EXPECT_NEAR(r.total_s, 130, 1e-6);
  EXPECT_NEAR(r.energy_j, 100 * 50 + 500 * 80, 1e-6) << "the busy floor while both start, full power after";
}

TEST(Simulator, AnUndeclaredJobSettlesOnceItsStartUpIsOverAtWhatItUsesAlone) {
  // A (0.3 alone, 20 s of start-up) settles alone on a GPU: measured from
  // its training, it settles at 0.3, where a reading from its start gives
  // the GPU's mean rise over start-up and training (less).
  std::vector<TraceJob> trace{job(0, "a", 200, 4, 0.3)};
  trace[0].command = "python a.py";
  trace[0].startup_s = 20;
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  auto r = simulate(trace, o);
  ASSERT_TRUE(r.jobs[0].settled_share);
  EXPECT_NEAR(*r.jobs[0].settled_share, 0.3, 1e-6);
  EXPECT_NEAR(r.total_s, 200, 1e-6);
}

TEST(Simulator, AGpuOverTheCeilingWhoseActivityGrewTakesAnUnknownJobAsTheRunnerDoes) {
  // a (0.85 alone) settles alone, over the 0.8 ceiling, its rise 0.85: the
  // GPU still grows, so b (share and memory unknown, started provisionally)
  // starts once a settled and its memory was measured, as under colo run;
  // the simulator's quick pre-check once refused it until a ended (100 s).
  std::vector<TraceJob> trace{job(0, "a", 100, 4, 0.85), job(0, "b", 100, 4, 0.5)};
  trace[0].command = "python a.py";
  trace[1].command = "python b.py";
  for (auto& j : trace) j.mem_estimate_bytes.reset();
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  o.provisional_memory = true;
  auto r = simulate(trace, o);
  EXPECT_DOUBLE_EQ(r.jobs[0].start_s, 0);
  EXPECT_GT(r.jobs[1].start_s, 0);
  EXPECT_LT(r.jobs[1].start_s, 10);
}

TEST(Simulator, UndeclaredSharesAreMeasuredAfterASettleWindow) {
  // Four jobs of SM activity 0.3 on one GPU, none declared. Three settle at
  // once (each measured over 1 s of warm-up and 3 s of training, the rise
  // split three ways); the fourth waits for a settling place. Its share is
  // then known from theirs; the known shares (0.9) are over the 80%
  // ceiling, but the last settlement raised the GPU's activity, so it joins
  // and is judged by the rise it brings (0.1, to 1.0).
  std::vector<TraceJob> trace;
  for (int i = 0; i < 4; ++i) {
    TraceJob j = job(0, "j" + std::to_string(i), 100, 4, 0.3);
    j.command = "python train.py";
    trace.push_back(j);
  }
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  auto r = simulate(trace, o);
  EXPECT_DOUBLE_EQ(r.jobs[0].start_s, 0);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 0) << "three settle at once";
  EXPECT_DOUBLE_EQ(r.jobs[2].start_s, 0);
  EXPECT_DOUBLE_EQ(r.jobs[3].start_s, 4) << "no settling place until the three settle at 4 s";
  EXPECT_EQ(r.judged_joins, 1);
  EXPECT_EQ(r.judged_closings, 0) << "it raised the GPU from 0.9 to 1.0";
}

TEST(Simulator, AJobJoiningASaturatedGpuSettlesAtWhatItUsesAloneNotAtWhatTheGpuRose) {
  // A (0.8 alone) settles alone; B (0.6 alone) joins at 10 s. The GPU
  // rises only to 1.0 and both run at 1/1.4 of alone speed: B took 0.2
  // plus the 0.8 x (1 - 1/1.4) A lost, at 1/1.4 of its own speed.
  std::vector<TraceJob> trace{job(0, "a", 300, 4, 0.8), job(10, "b", 100, 4, 0.6)};
  trace[0].command = "python a.py";
  trace[1].command = "python b.py";
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  o.thresholds.max_sm_activity = 1.0;  // room for B beside A
  auto r = simulate(trace, o);
  EXPECT_DOUBLE_EQ(r.jobs[1].start_s, 10);
  ASSERT_TRUE(r.jobs[0].settled_share);
  EXPECT_NEAR(*r.jobs[0].settled_share, 0.8, 1e-6) << "alone: its rise";
  ASSERT_TRUE(r.jobs[1].settled_share);
  EXPECT_NEAR(*r.jobs[1].settled_share, 0.6, 1e-6) << "not the 0.2 its GPU rose";
}

TEST(Simulator, AJobJoiningAnOversubscribedGpuSettlesAtWhatItUsesAloneNotAtItsPartOfTheGpu) {
  // A (0.8) and B (0.6) already ask 1.4 of the GPU; C (0.5) joins at 20 s.
  // All three run at 1/1.9 of alone speed: A and B lose 1 - 1.4/1.9 of their
  // rate, which is C's 0.5 taken from a demand of 1.4, not from the GPU's 1.0
  // (that would give C 0.36).
  std::vector<TraceJob> trace{job(0, "a", 300, 4, 0.8), job(10, "b", 300, 4, 0.6), job(20, "c", 100, 4, 0.5)};
  for (size_t i = 0; i < trace.size(); ++i) trace[i].command = "python " + trace[i].name + ".py";
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  o.thresholds.max_sm_activity = 5.0;
  o.throughput_rule = false;
  auto r = simulate(trace, o);
  EXPECT_DOUBLE_EQ(r.jobs[2].start_s, 20);
  for (size_t i = 0; i < trace.size(); ++i) {
    ASSERT_TRUE(r.jobs[i].settled_share) << trace[i].name;
    EXPECT_NEAR(*r.jobs[i].settled_share, trace[i].sm_activity, 1e-6) << trace[i].name;
  }
}

TEST(Simulator, AJobOfAWorkloadAlreadyMeasuredTakesItsShareWithoutSettling) {
  // Two learning rates of one model: different commands, one [job.model]
  // table. The second starts once the first has settled and takes its share.
  std::vector<TraceJob> trace{job(0, "lr0.1", 100, 4, 0.6), job(30, "lr0.2", 100, 4, 0.6)};
  trace[0].command = "python train.py --lr 0.1";
  trace[1].command = "python train.py --lr 0.2";
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  for (auto& t : trace) t.workload = "";
  SimulationResult apart = simulate(trace, o);
  EXPECT_TRUE(apart.jobs[1].settled_share) << "another command, no workload: it settles";
  for (auto& t : trace) t.workload = "resnet18 b128 sgd";
  SimulationResult alike = simulate(trace, o);
  EXPECT_FALSE(alike.jobs[1].settled_share) << "its workload's share was known: nothing to settle";
  EXPECT_EQ(alike.jobs_lost, 0);
}

// The most jobs running at once.
size_t most_at_once(const SimulationResult& r) {
  size_t most = 0;
  for (const auto& a : r.jobs) {
    size_t n = 0;
    for (const auto& b : r.jobs) n += b.start_s <= a.start_s && a.start_s < b.end_s;
    most = std::max(most, n);
  }
  return most;
}

TEST(Simulator, AProbesPauseDoesNotMakeAFullGpuLookEmptyToTheJobsThatJoinAfterIt) {
  // Six jobs of 0.8 alone, none declared: three settle together, each
  // measured alone while the others pause. What the GPU read during those
  // pauses is one job's 0.8; taken as its load, the fourth job's rise was
  // read from 0.8 to 1.0 and the GPU kept taking jobs up to all six.
  std::vector<TraceJob> trace;
  for (int i = 0; i < 6; ++i) {
    trace.push_back(job(0, "j" + std::to_string(i), 100, 4, 0.8));
    trace.back().command = "python j" + std::to_string(i) + ".py";
    trace.back().startup_s = 10;
  }
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  o.thresholds.probe_alone = true;
  SimulationResult r = simulate(trace, o);
  EXPECT_LE(most_at_once(r), 4u) << "the fourth raised nothing: its GPU stopped growing";
  EXPECT_EQ(r.jobs_lost, 0);
}

// A (0.7 alone) and B (0.3 alone), of different commands, start together
// on an empty GPU and settle together.
SimulationResult settled_together(bool probe_alone) {
  std::vector<TraceJob> trace{job(0, "a", 100, 4, 0.7), job(0, "b", 100, 4, 0.3)};
  trace[0].command = "python a.py";
  trace[1].command = "python b.py";
  auto o = options(1, "magm", CollocationMode::kMps);
  o.declared_sm_share = false;
  o.thresholds.probe_alone = probe_alone;
  return simulate(trace, o);
}

TEST(Simulator, JobsThatSettleTogetherAreEachMeasuredAloneWhenTheirNeighboursPause) {
  SimulationResult beside = settled_together(false);
  EXPECT_DOUBLE_EQ(beside.jobs[1].start_s, 0);
  EXPECT_FALSE(beside.jobs[0].settled_share) << "beside each other, each share is their mean: not seen";
  SimulationResult probed = settled_together(true);
  EXPECT_DOUBLE_EQ(probed.jobs[1].start_s, 0);
  ASSERT_TRUE(probed.jobs[0].settled_share);
  ASSERT_TRUE(probed.jobs[1].settled_share);
  EXPECT_NEAR(*probed.jobs[0].settled_share, 0.7, 1e-9);
  EXPECT_NEAR(*probed.jobs[1].settled_share, 0.3, 1e-9);
  // Due at 4 s (1 s of warm-up, 3 s measured): B pauses 4-8 while A is
  // measured alone, then A pauses 8-12. Each lost 4 s, and B's work waited
  // for A's: both end 4 s after they would have.
  EXPECT_NEAR(probed.total_s, beside.total_s + 4, 1e-6);
}

// A and B (0.85 alone, declared) each start up for 20 s and train 80 s.
// No packing past the SM ceiling (no rise reaches min_sm_gain), so that
// only when a known share counts decides whether B joins A.
SimulationResult known_shares_with_start_ups(bool count_once_training) {
  std::vector<TraceJob> trace{job(0, "a", 100, 4, 0.85), job(0, "b", 100, 4, 0.85)};
  for (auto& t : trace) t.startup_s = 20;
  auto o = options(1, "magm", CollocationMode::kMps);
  o.thresholds.count_shares_once_training = count_once_training;
  o.thresholds.min_sm_gain = 1.1;
  return simulate(trace, o);
}

TEST(Simulator, AKnownShareCountsOnceItsJobTrainsSoAnotherStartsBesideItsStartUp) {
  SimulationResult from_launch = known_shares_with_start_ups(false);
  EXPECT_DOUBLE_EQ(from_launch.jobs[1].start_s, 100) << "A's 0.85 closed the GPU from its launch";
  EXPECT_NEAR(from_launch.total_s, 200, 1e-6);
  SimulationResult once_training = known_shares_with_start_ups(true);
  EXPECT_DOUBLE_EQ(once_training.jobs[1].start_s, 0);
  // Both train from 20 s at 1/1.7 of alone: 80 s of work takes 136 s.
  EXPECT_NEAR(once_training.total_s, 156, 1e-6);
}

// A warm-up job of workload "w" completes first, so the figure alone of
// every later "w" job is known; then one joins every 10 s.
std::vector<TraceJob> staggered_joins(double sm_activity) {
  std::vector<TraceJob> trace{job(0, "w-0", 50, 4, sm_activity)};
  for (int i = 1; i <= 3; ++i) trace.push_back(job(90 + 10 * i, "w-" + std::to_string(i), 100, 4, sm_activity));
  return trace;
}

TEST(Simulator, AGpuWhoseThroughputStopsGrowingTakesNoFurtherJob) {
  // Two jobs of SM activity 1.0 each train at half speed together: the sum
  // stays 1.0 of one alone, so 2 s after w-2 joins the GPU closes and w-3
  // waits for a job to leave.
  auto o = options(1, "magm", CollocationMode::kMps);
  o.thresholds.max_sm_activity = 5.0;  // only the throughput rule can refuse
  auto with_rule = simulate(staggered_joins(1.0), o);
  EXPECT_EQ(with_rule.gpus_closed, 2) << "when w-2 joins, and again when w-3 takes w-1's place beside w-2";
  EXPECT_GT(with_rule.jobs[3].start_s, with_rule.jobs[3].submit_s + 50) << "held until w-1 leaves";
  EXPECT_DOUBLE_EQ(with_rule.jobs[3].start_s, with_rule.jobs[1].end_s);
  o.throughput_rule = false;
  auto without = simulate(staggered_joins(1.0), o);
  EXPECT_EQ(without.gpus_closed, 0);
  EXPECT_DOUBLE_EQ(without.jobs[3].start_s, 120);
}

TEST(Simulator, AGpuWhoseThroughputStillGrowsStaysOpen) {
  // At SM activity 0.3 three jobs all train at full speed: each join grows the sum.
  auto o = options(1, "magm", CollocationMode::kMps);
  auto r = simulate(staggered_joins(0.3), o);
  EXPECT_EQ(r.gpus_closed, 0);
  EXPECT_DOUBLE_EQ(r.jobs[3].start_s, 120);
  EXPECT_DOUBLE_EQ(r.jobs[3].end_s, 220);
}

TEST(Simulator, WorkloadOfAGeneratedJobIsItsNameWithoutItsIndex) {
  TraceJob generated = job(0, "resnet18-cifar-17", 1, 1, 0.5);
  EXPECT_EQ(workload_of(generated), "resnet18-cifar");
  EXPECT_EQ(workload_of(job(0, "lenet-v2", 1, 1, 0.5)), "lenet-v2");
  generated.command = "python train.py --lr 0.1";
  EXPECT_EQ(workload_of(generated), "python train.py --lr 0.1");
}

}  // namespace
}  // namespace colo::sched
