// `colo estimate`, and the estimates `colo submit` attaches to training jobs.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/colo_process.h"

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
  EXPECT_GT(record["spec"]["mem_bytes"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace colo
