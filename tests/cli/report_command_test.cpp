// `colo report` on directories a user points it at: other commands' output,
// and ones that are not results at all.

#include <gtest/gtest.h>

#include "cli/colo_process.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo {
namespace {

using testing::run_colo;
using testing::TempDir;

// A `colo compare --out` summary: two levels measured, one skipped.
const char* kCompareSummary = R"json({
 "workload": "jobs.toml", "kind": "jobs", "jobs": 2, "gpus": 0, "rounds": 1, "warmup_rounds": 0,
 "basis": "training",
 "levels": [
  {"level": "sequential", "samples_per_s": 2000.0, "samples_per_s_min": 2000.0, "samples_per_s_max": 2000.0,
   "runs": [{"level": "sequential", "ok": true, "samples_per_s": 2000.0}]},
  {"level": "timeslice", "samples_per_s": 3900.0, "samples_per_s_min": 3900.0, "samples_per_s_max": 3900.0,
   "runs": [{"level": "timeslice", "ok": true, "samples_per_s": 3900.0}]},
  {"level": "mps", "skipped": "no GPU: MPS shares a GPU"}],
 "recommended_for_throughput": {"best": "timeslice", "measure": "samples_per_s",
   "reason": "for throughput (samples/s): timeslice, 95.0% ahead of sequential"},
 "recommended_for_energy": {"best": null, "measure": "samples_per_j",
   "reason": "for energy (samples per joule): none (no level measured it)"}
})json";

TEST(ColoReport, ACompareDirectoryGetsItsRecommendationsAndPlots) {
  TempDir dir;
  make_directories(dir.file("out"));
  dir.write("out/summary.json", kCompareSummary);
  auto run = run_colo(dir, "report " + dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("recommended for throughput (samples/s): timeslice"), std::string::npos) << run.out;
  ASSERT_TRUE(path_exists(dir.file("out/compare.png"))) << run.out << run.err;
  EXPECT_GT(read_file(dir.file("out/compare.png")).size(), 1000u);
}

TEST(ColoReport, ASummaryThatHoldsNoRunsIsRejectedSayingWhatIsExpected) {
  TempDir dir;
  make_directories(dir.file("out"));
  for (const char* text : {"{}", "[]", "[1, 2]", "\"runs\""}) {
    dir.write("out/summary.json", text);
    auto run = run_colo(dir, "report " + dir.file("out"));
    EXPECT_EQ(run.status, 2) << text << ": " << run.err;
    EXPECT_NE(run.err.find("expected a list of one or more runs"), std::string::npos) << text << ": " << run.err;
    EXPECT_EQ(run.err.find("json.exception"), std::string::npos) << text << ": " << run.err;
    EXPECT_EQ(run.err.find("Traceback"), std::string::npos) << text << ": " << run.err;
  }
}

TEST(ColoReport, AMissingDirectoryOrAFileIsNamedAsSuch) {
  TempDir dir;
  auto missing = run_colo(dir, "report " + dir.file("nowhere"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("no such directory"), std::string::npos) << missing.err;
  dir.write("jobs.toml", "[[job]]\n");
  auto file = run_colo(dir, "report " + dir.file("jobs.toml"));
  EXPECT_EQ(file.status, 2);
  EXPECT_NE(file.err.find("not a file"), std::string::npos) << file.err;
}

}  // namespace
}  // namespace colo
