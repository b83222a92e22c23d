// `colo estimate`, and the estimates `colo submit` attaches to training jobs.

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/colo_process.h"
#include "colo/core/files.h"

namespace colo {
namespace {

using testing::run_colo;
using testing::TempDir;

const char* kSpec =
    "device = \"auto\"\nbatch_size = 64\n[model]\nname = \"lenet\"\n"
    "[data]\nname = \"synthetic\"\nshape = [1, 28, 28]\nclasses = 10\ntrain_size = 256\ntest_size = 64\n"
    "[optimizer]\nname = \"adam\"\nlr = 0.001\n";

TEST(ColoEstimate, PrintsEachEstimatorAndTheBreakdown) {
  TempDir dir;
  dir.write("spec.toml", kSpec);
  auto run = run_colo(dir, "estimate " + dir.file("spec.toml"));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("analytical"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("optimizer"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("context"), std::string::npos) << run.out;

  auto json = run_colo(dir, "estimate --json " + dir.file("spec.toml"));
  ASSERT_EQ(json.status, 0) << json.err;
  auto all = nlohmann::json::parse(json.out);
  ASSERT_EQ(all.size(), 1u);
  const auto& a = all[0];
  EXPECT_TRUE(a["known"].get<bool>());
  const auto& b = a["breakdown"];
  EXPECT_EQ(b["optimizer"].get<int64_t>(), 2 * b["parameters"].get<int64_t>()) << "Adam: two moments";
  int64_t sum = 0;
  for (const auto& part : b) sum += part.get<int64_t>();
  EXPECT_EQ(a["bytes"].get<int64_t>(), sum);
}

TEST(ColoEstimate, BadInputIsOneLineAndStatusTwo) {
  TempDir dir;
  auto missing = run_colo(dir, "estimate " + dir.file("nope.toml"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("nope.toml"), std::string::npos) << missing.err;
  dir.write("summary.toml", "parameters = 10\nbatch_size = 8\ninput_shape = [4]\n");
  auto bad_summary = run_colo(dir, "estimate --summary " + dir.file("summary.toml"));
  EXPECT_EQ(bad_summary.status, 2);
  EXPECT_NE(bad_summary.err.find("activations_per_sample"), std::string::npos) << bad_summary.err;
  auto no_model = run_colo(dir, "estimate --summary " + std::string(COLO_SOURCE_DIR) +
                                    "/examples/summary_resnet18.toml --learned " + dir.file("none.pt"));
  EXPECT_EQ(no_model.status, 2);
  EXPECT_NE(no_model.err.find("none.pt"), std::string::npos) << no_model.err;
}

int64_t estimate_bytes(const TempDir& dir, const std::string& extra, const std::string& env = "") {
  auto run = run_colo(dir, "estimate --json " + dir.file("spec.toml") + extra, env);
  EXPECT_EQ(run.status, 0) << run.err;
  return run.status == 0 ? nlohmann::json::parse(run.out)[0]["bytes"].get<int64_t>() : -1;
}

TEST(ColoEstimate, TakesAnotherGpusConvolutionWorkspaceTable) {
  TempDir dir;
  dir.write("spec.toml", kSpec);
  // LeNet's second convolution taking 1 GiB for its weight gradient at batch 64.
  dir.write("ws.json",
            "{\"shapes\": {\"c6o16k5x5s1p0g1h14w14\": {\"weight_grad\": [[64, 1073741824]]}}}");
  int64_t reference = estimate_bytes(dir, "");
  int64_t other = estimate_bytes(dir, " --conv-workspace " + dir.file("ws.json"));
  EXPECT_GE(other - reference, int64_t{1} << 29) << reference << " vs " << other;

  dir.write("bad.json", "{\"shapes\": {\"c6o16\": {}}}");
  auto bad = run_colo(dir, "estimate " + dir.file("spec.toml") + " --conv-workspace " + dir.file("bad.json"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("bad.json"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("c6o16"), std::string::npos) << bad.err;
  auto missing = run_colo(dir, "estimate " + dir.file("spec.toml") + " --conv-workspace " + dir.file("none.json"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.err;
}

TEST(ColoEstimate, TakesAStoredGpuProfileByName) {
  TempDir dir;
  dir.write("spec.toml", kSpec);
  make_directories(dir.file("profiles"));
  // As `colo gpus --profile` stores it: this GPU's context is 1 GiB larger than the reference H100's.
  const int64_t context = (int64_t{758} << 20) + (int64_t{1} << 30);
  dir.write("profiles/h200.json", "{\"name\": \"NVIDIA H200\", \"context_bytes\": " + std::to_string(context) +
                                      ", \"library_workspace_bytes\": 68488704, \"conv_workspace\": {\"shapes\": {}}}");
  const std::string env = "COLO_PROFILE_DIR=" + dir.file("profiles");
  int64_t reference = estimate_bytes(dir, "", env);
  int64_t h200 = estimate_bytes(dir, " --gpu h200", env);
  EXPECT_GE(h200 - reference, int64_t{1} << 29) << reference << " vs " << h200;
  EXPECT_EQ(estimate_bytes(dir, " --gpu h100", env), reference);  // the reference is built in
  auto missing = run_colo(dir, "estimate " + dir.file("spec.toml") + " --gpu a100", env);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("colo gpus --profile"), std::string::npos) << missing.err;
}

TEST(ColoRun, EstimatesATrainingSpecInTheSchedulerNotAtSubmission) {
  TempDir dir;
  dir.write("spec.toml", kSpec);
  // The job only names the spec (echo), and runs long enough for the
  // estimate to reach it: what is tested is who estimates it, and when.
  dir.write("jobs.toml", "[[job]]\nname = \"spec-job\"\ncommand = \"sleep 4; echo colo train spec.toml\"\nworkdir = \"" +
                             dir.path() + "\"\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " --store " + dir.file("s.db") + " --poll 0.1",
                      "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err.find("colo: spec-job needs about"), std::string::npos) << "estimated at submission:\n" << run.err;
  EXPECT_NE(run.err.find("job 1 (spec-job) needs about"), std::string::npos) << run.err;
  auto show = run_colo(dir, "show --store " + dir.file("s.db") + " 1");
  ASSERT_EQ(show.status, 0) << show.err;
  auto record = nlohmann::json::parse(show.out);
  ASSERT_TRUE(record["spec"].contains("mem_bytes")) << "the scheduler's estimate is kept: " << show.out;
  EXPECT_GT(record["spec"]["mem_bytes"].get<int64_t>(), 0);
}

TEST(ColoSubmit, AttachesTheEstimateOfATrainingSpec) {
  TempDir dir;
  dir.write("spec.toml", kSpec);
  auto submit = run_colo(dir, "submit --store " + dir.file("s.db") + " -- colo train " + dir.file("spec.toml"));
  ASSERT_EQ(submit.status, 0) << submit.err;
  EXPECT_NE(submit.err.find("needs about"), std::string::npos) << submit.err;
  auto show = run_colo(dir, "show --store " + dir.file("s.db") + " 1");
  ASSERT_EQ(show.status, 0) << show.err;
  auto record = nlohmann::json::parse(show.out);
  ASSERT_TRUE(record["spec"].contains("mem_bytes")) << show.out;
  // The analytical estimate plus the 10% margin, then its uncertainty on top:
  // the high bound (bytes_high) is what the job reserves.
  auto json = run_colo(dir, "estimate --json " + dir.file("spec.toml"));
  ASSERT_EQ(json.status, 0) << json.err;
  const auto analytical = nlohmann::json::parse(json.out)[0];
  ASSERT_EQ(analytical["estimator"], "analytical");
  const int64_t bytes = analytical["bytes"].get<int64_t>(), uncertainty = analytical["uncertainty"].get<int64_t>();
  EXPECT_GT(uncertainty, 0);
  EXPECT_EQ(analytical["bytes_high"].get<int64_t>(), bytes + uncertainty);
  EXPECT_EQ(record["spec"]["mem_bytes"].get<int64_t>(),
            bytes + static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * 0.10)) + uncertainty);
}

}  // namespace
}  // namespace colo
