// What colo compare recommends from measured rounds (compare/summary.h).

#include "colo/compare/summary.h"

#include <gtest/gtest.h>

namespace colo::compare {
namespace {

LevelResults measured(ShareLevel level, std::vector<double> samples_per_s) {
  LevelResults results;
  results.level = level;
  for (double rate : samples_per_s) {
    LevelRun run;
    run.level = level;
    run.ok = true;
    run.samples_per_s = rate;
    results.runs.push_back(run);
  }
  summarise(results);
  return results;
}

TEST(Recommend, RoundsThatDoNotOverlapRecommendTheBestLevel) {
  Recommendation rec = recommend({measured(ShareLevel::kMps, {100, 104, 102}),
                                  measured(ShareLevel::kFused, {120, 118, 125})},
                                 "samples_per_s");
  ASSERT_TRUE(rec.recommended.has_value());
  EXPECT_EQ(*rec.recommended, ShareLevel::kFused);
  EXPECT_FALSE(rec.within_noise);
  EXPECT_NE(rec.reason.find("fused"), std::string::npos) << rec.reason;
}

TEST(Recommend, RoundsThatOverlapRecommendNoLevelAndSaySo) {
  Recommendation rec = recommend({measured(ShareLevel::kMps, {100, 112, 106}),
                                  measured(ShareLevel::kStreams, {104, 110, 109})},
                                 "samples_per_s");
  EXPECT_FALSE(rec.recommended.has_value());
  EXPECT_TRUE(rec.within_noise);
  ASSERT_TRUE(rec.best.has_value());  // the leader is still named, as a leader
  EXPECT_NE(rec.reason.find("none"), std::string::npos) << rec.reason;
  EXPECT_EQ(to_json(rec)["recommended"], nullptr);
}

TEST(Recommend, OneRoundEachRecommendsOnlyPastTheSingleRunNoise) {
  Recommendation close = recommend({measured(ShareLevel::kMps, {100}), measured(ShareLevel::kStreams, {103})},
                                   "samples_per_s", 0.05);
  EXPECT_FALSE(close.recommended.has_value());
  EXPECT_NE(close.reason.find("--repeat"), std::string::npos) << close.reason;
  Recommendation clear = recommend({measured(ShareLevel::kMps, {100}), measured(ShareLevel::kStreams, {110})},
                                   "samples_per_s", 0.05);
  ASSERT_TRUE(clear.recommended.has_value());
  EXPECT_EQ(*clear.recommended, ShareLevel::kStreams);
}

TEST(LevelNote, RoundsWithoutASteadyStateAreCountedAndTheRemedyNamed) {
  LevelResults mps = measured(ShareLevel::kMps, {148000, 65000, 71000});
  for (LevelRun& run : mps.runs) run.basis = ThroughputBasis::kTraining;
  mps.runs[0].train_full_occupancy = true;
  std::string note = level_note(mps);
  EXPECT_NE(note.find("2 of 3 round(s) without a steady state"), std::string::npos) << note;
  EXPECT_NE(note.find("--steps"), std::string::npos) << note;
  for (LevelRun& run : mps.runs) run.train_full_occupancy = true;
  EXPECT_EQ(level_note(mps), "");
  mps.runs.back().stopped_at_budget = true;
  mps.runs[1].train_full_occupancy = false;
  note = level_note(mps);
  EXPECT_NE(note.find("stopped at --level-timeout"), std::string::npos) << note;
  EXPECT_NE(note.find("1 of 3 round(s)"), std::string::npos) << note;
}

TEST(LevelNote, LevelsThatStaggerTheirStartsAreNotToldToRaiseSteps) {
  LevelResults scheduler = measured(ShareLevel::kScheduler, {100, 101});
  for (LevelRun& run : scheduler.runs) run.basis = ThroughputBasis::kTraining;  // union windows
  EXPECT_EQ(level_note(scheduler), "");
  LevelResults timeslice = measured(ShareLevel::kTimeslice, {100, 101});
  for (LevelRun& run : timeslice.runs) run.basis = ThroughputBasis::kTraining;
  EXPECT_NE(level_note(timeslice).find("2 of 2 round(s)"), std::string::npos) << level_note(timeslice);
}

TEST(LevelNote, WallFiguresHaveNoSteadyStateToMiss) {
  LevelResults timeslice = measured(ShareLevel::kTimeslice, {100, 101});  // basis: wall
  EXPECT_EQ(level_note(timeslice), "");
  timeslice.failure = "job 2 exited 1";
  EXPECT_EQ(level_note(timeslice), "failed: job 2 exited 1");
}

}  // namespace
}  // namespace colo::compare
