#include "colo/sched/policy.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace colo::sched {
namespace {

using testing::kGiB;

GpuView gpu(int index, int64_t free_gib, double sm, int jobs) {
  return GpuView{index, 80 * kGiB, free_gib * kGiB, sm, jobs, false, "", "", false, ""};
}

JobRequest job(int64_t mem_gib, double sm = 0.3) { return JobRequest{1, mem_gib * kGiB, sm, false, 0}; }

std::optional<int> pick_one(Policy& p, const JobRequest& j, const std::vector<GpuView>& gpus) {
  Placement placement = pick_gpus(p, j, gpus);
  if (!placement.placed()) return std::nullopt;
  EXPECT_EQ(placement.gpus.size(), 1u);
  return placement.gpus.front();
}

std::optional<int> pick(const std::string& policy, const JobRequest& j, const std::vector<GpuView>& gpus) {
  auto p = make_policy(policy);
  return pick_one(*p, j, gpus);
}

TEST(ExclusivePolicy, TakesOnlyEmptyGpusLowestIndexFirst) {
  std::vector<GpuView> gpus{gpu(0, 70, 0.2, 1), gpu(1, 80, 0, 0), gpu(2, 80, 0, 0)};
  EXPECT_EQ(pick("exclusive", job(4), gpus), 1);
  EXPECT_EQ(pick("exclusive", job(4), {gpu(0, 70, 0.2, 1)}), std::nullopt);
}

TEST(MagmPolicy, PrefersGpuWithMostFreeMemory) {
  std::vector<GpuView> gpus{gpu(0, 30, 0.3, 2), gpu(1, 60, 0.5, 1), gpu(2, 40, 0.1, 1)};
  EXPECT_EQ(pick("magm", job(4), gpus), 1);
}

TEST(LugPolicy, PrefersLeastSmActivity) {
  std::vector<GpuView> gpus{gpu(0, 30, 0.3, 2), gpu(1, 60, 0.5, 1), gpu(2, 40, 0.1, 1)};
  EXPECT_EQ(pick("lug", job(4), gpus), 2);
}

TEST(RadRmThresholds, BusyGpuOrTooLittleMemoryIsFilteredOut) {
  // GPU 0 is over 80% SM activity; GPU 1 lacks estimate + 1 GiB margin.
  std::vector<GpuView> gpus{gpu(0, 70, 0.85, 1), gpu(1, 10, 0.2, 1)};
  for (const char* policy : {"round-robin", "magm", "lug", "best-fit"}) {
    EXPECT_EQ(pick(policy, job(10), gpus), std::nullopt) << policy;
    EXPECT_EQ(pick(policy, job(8), gpus), 1) << policy << ": 8 + 1 GiB margin fits in 10";
  }
}

TEST(RadRmThresholds, AGpuPastTheCeilingTakesAJobOnlyWithTwiceTheMemoryMargin) {
  Thresholds t;
  GpuView growing = gpu(0, 10, 0.9, 2);
  growing.grows_past_ceiling = true;
  EXPECT_TRUE(collocation_thresholds(job(8), growing, t)) << "8 + 2 GiB fits in 10";
  Fit refused = collocation_thresholds(job(9), growing, t);
  EXPECT_EQ(refused.why, Fit::Why::kMemory) << "9 + 1 GiB would fit a GPU under the ceiling, not one past it";
  EXPECT_TRUE(collocation_thresholds(job(9), gpu(0, 10, 0.5, 2), t));
}

TEST(RadRmThresholds, UnknownMemoryOnlyGoesOnAnEmptyGpu) {
  JobRequest unknown{1, std::nullopt, 0.3, false, 0};
  EXPECT_EQ(pick("magm", unknown, {gpu(0, 70, 0.1, 1), gpu(1, 80, 0.0, 0)}), 1);
  EXPECT_EQ(pick("magm", unknown, {gpu(0, 70, 0.1, 1)}), std::nullopt);
}

TEST(RoundRobinPolicy, CyclesThroughTheGpus) {
  auto p = make_policy("round-robin");
  std::vector<GpuView> gpus{gpu(0, 80, 0, 0), gpu(1, 80, 0, 0), gpu(2, 80, 0, 0)};
  EXPECT_EQ(pick_one(*p, job(1), gpus), 0);
  EXPECT_EQ(pick_one(*p, job(1), gpus), 1);
  EXPECT_EQ(pick_one(*p, job(1), gpus), 2);
  EXPECT_EQ(pick_one(*p, job(1), gpus), 0);
}

TEST(BestFitPolicy, FillsABusyGpuBeforeOpeningAnEmptyOne) {
  std::vector<GpuView> gpus{gpu(0, 80, 0.0, 0), gpu(1, 40, 0.3, 1)};
  EXPECT_EQ(pick("best-fit", job(4, 0.3), gpus), 1);
  EXPECT_EQ(pick("magm", job(4, 0.3), gpus), 0) << "magm would open the empty GPU";
}

TEST(BestFitPolicy, RespectsSmHeadroom) {
  std::vector<GpuView> gpus{gpu(0, 80, 0.0, 0), gpu(1, 40, 0.6, 1)};
  EXPECT_EQ(pick("best-fit", job(4, 0.5), gpus), 0) << "0.6 + 0.5 would oversubscribe GPU 1";
}

TEST(BestFitPolicy, PrefersTheTightestMemoryFit) {
  std::vector<GpuView> gpus{gpu(0, 50, 0.2, 1), gpu(1, 12, 0.2, 1)};
  EXPECT_EQ(pick("best-fit", job(10, 0.2), gpus), 1);
}

TEST(SlurmShardPolicy, PacksByWholeShardsOfMemoryAloneLowestIndexFirst) {
  // GPU 0 is busy and past the SM ceiling, which Slurm does not see.
  std::vector<GpuView> gpus{gpu(0, 5, 0.95, 2), gpu(1, 80, 0.0, 0)};
  JobRequest small{1, 4 * kGiB + kGiB / 2, 0.3, false, 0};  // 5 shards: fits the 5 GiB left
  EXPECT_EQ(pick("slurm-shard", small, gpus), 0);
  JobRequest larger{1, 5 * kGiB + kGiB / 5, 0.3, false, 0};  // 6 shards
  EXPECT_EQ(pick("slurm-shard", larger, gpus), 1);
  JobRequest unknown{1, std::nullopt, 0.3, false, 0};
  EXPECT_EQ(pick("slurm-shard", unknown, gpus), 1) << "unknown memory asks for a whole GPU";
  EXPECT_FALSE(make_policy("slurm-shard")->within_collocation_thresholds());
  EXPECT_TRUE(make_policy("best-fit")->within_collocation_thresholds());
}

TEST(PickGpus, TheUnexplainedOneGpuPathPicksWhatTheFullScanPicks) {
  // The simulator's one-pass path against the scan that explains itself.
  uint64_t state = 12345;
  auto next = [&state](int n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % static_cast<uint64_t>(n));
  };
  for (const auto& name : policy_names()) {
    for (int round = 0; round < 200; ++round) {
      std::vector<GpuView> gpus;
      for (int g = 0; g < 6; ++g) gpus.push_back(gpu(g, next(81), next(11) / 10.0, next(3)));
      JobRequest j{1, static_cast<int64_t>(next(30)) * kGiB, next(6) / 10.0, false, 0};
      auto a = make_policy(name), b = make_policy(name);
      Placement explained = pick_gpus(*a, j, gpus, true);
      Placement quick = pick_gpus(*b, j, gpus, false);
      EXPECT_EQ(explained.gpus, quick.gpus) << name << " round " << round;
    }
  }
}

TEST(CommonRules, MustRunAloneNeedsAnEmptyGpuAndHoldsIt) {
  JobRequest alone = job(4);
  alone.must_run_alone = true;
  EXPECT_EQ(pick("magm", alone, {gpu(0, 70, 0.1, 1), gpu(1, 80, 0, 0)}), 1);
  GpuView held = gpu(0, 70, 0.1, 1);
  held.held_exclusively = true;
  EXPECT_EQ(pick("magm", job(1), {held}), std::nullopt);
}

TEST(Reasons, AWaitingJobSaysWhatEachGpuLacks) {
  auto p = make_policy("magm");
  Placement none = pick_gpus(*p, job(10), {gpu(0, 70, 0.85, 1), gpu(1, 10, 0.2, 1)});
  ASSERT_FALSE(none.placed());
  EXPECT_NE(none.reason.find("GPU 0: SM activity 0.85 > 0.80"), std::string::npos) << none.reason;
  EXPECT_NE(none.reason.find("GPU 1: memory: needs 11.0 GiB with margin, 10.0 GiB free"), std::string::npos)
      << none.reason;
  GpuView settling = gpu(0, 70, 0.1, 1);
  settling.settling_reason = "job 7 settling";
  EXPECT_EQ(pick_gpus(*p, job(1, 0), {settling}).reason, "GPU 0: job 7 settling");
  EXPECT_TRUE(pick_gpus(*p, job(1, 0.2), {settling}).placed()) << "a job of known share may join";
}

TEST(GangPlacement, TakesAsManyGpusAsAskedOrNone) {
  auto p = make_policy("magm");
  JobRequest two = job(4);
  two.gpus = 2;
  Placement both = pick_gpus(*p, two, {gpu(0, 30, 0.1, 1), gpu(1, 60, 0.1, 1), gpu(2, 50, 0.1, 1)});
  EXPECT_EQ(both.gpus, (std::vector<int>{1, 2})) << "the two with most free memory";
  Placement none = pick_gpus(*p, two, {gpu(0, 70, 0.9, 1), gpu(1, 60, 0.1, 1)});
  EXPECT_FALSE(none.placed()) << "never partly placed";
  EXPECT_NE(none.reason.find("needs 2 GPUs at once, 1 can take it"), std::string::npos) << none.reason;
}

TEST(GpuRoom, MightFitOnlyWhereAnEmptyOrOpenGpuHasTheRoom) {
  Thresholds t;
  GpuView busy = gpu(0, 70, 0.9, 1), roomy = gpu(1, 20, 0.2, 1);
  EXPECT_FALSE(might_fit(job(10), room_of({busy}, t), t)) << "70 GiB free, but over the SM ceiling";
  EXPECT_TRUE(might_fit(job(10), room_of({busy, roomy}, t), t));
  EXPECT_FALSE(might_fit(job(20), room_of({busy, roomy}, t), t)) << "20 + 1 GiB margin does not fit in 20";
  EXPECT_TRUE(might_fit(job(60), room_of({busy, gpu(2, 80, 0, 0)}, t), t)) << "an empty GPU takes anything";
  for (const auto& views : {std::vector<GpuView>{busy, roomy}, std::vector<GpuView>{busy, gpu(2, 80, 0, 0)}}) {
    for (int mem : {1, 10, 19, 20, 60}) {
      auto p = make_policy("magm");
      if (!might_fit(job(mem), room_of(views, t), t)) {
        EXPECT_FALSE(pick_gpus(*p, job(mem), views).placed()) << "might_fit may never refuse a job a policy places";
      }
    }
  }
}

TEST(Policies, UnknownNameIsRejectedWithTheKnownOnes) {
  try {
    make_policy("fastest");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exclusive, round-robin, magm, lug, best-fit"), std::string::npos);
  }
}

}  // namespace
}  // namespace colo::sched
