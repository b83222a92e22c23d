// `colo sweep` as a user runs it.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/colo_process.h"
#include "cli/shared_producer.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/paths.h"

namespace colo {
namespace {

using testing::run_colo;
using testing::TempDir;

std::string sweep_text(const std::string& output, const std::string& axes) {
  return "device = \"cpu\"\noutput = \"" + output + "\"\nepochs = 1\nbatch_size = 32\n"
         "[model]\nname = \"mlp\"\nwidths = [16]\n"
         "[data]\nname = \"synthetic\"\nshape = [1, 6, 6]\nclasses = 4\ntrain_size = 256\ntest_size = 128\n"
         "[optimizer]\nname = \"sgd\"\nlr = 0.05\n[sweep]\n[sweep.axes]\n" + axes;
}

TEST(ColoSweep, TrainsEveryConfigurationAndPrintsTheRanking) {
  TempDir dir;
  dir.write("s.toml", sweep_text(dir.file("out"), "lr = [0.001, 0.1]\nwidths = [[16], [8, 8]]\n"));
  auto run = run_colo(dir, "sweep " + dir.file("s.toml") + " --max-array 4");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("array 1/2: 2 models"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("rank"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("sweep: 4 models in 2 arrays"), std::string::npos) << run.out;
  auto results = nlohmann::json::parse(read_file(dir.file("out/results.json")));
  EXPECT_EQ(results["models"].size(), 4u);
}

TEST(ColoSweep, FusedArraysTrainFromASharedLoadersProducer) {
  TempDir dir;
  testing::SharedProducer producer(dir, 64);
  std::string common = "device = \"cpu\"\nepochs = 2\nbatch_size = 16\noutput = \"" + dir.file("out") +
                       "\"\n[model]\nname = \"mlp\"\nwidths = [16]\n[data]\nname = \"shared\"\nloader = \"" +
                       producer.data_file() + "\"\n[sweep]\nsampling = \"grid\"\n[sweep.axes]\nlr = [0.05, 0.1]\n";
  auto run = run_colo(dir, "sweep " + dir.write("sweep.toml", common));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  auto records = read_json_lines(dir.file("out/sweep.jsonl"));
  ASSERT_EQ(records.size(), 4u) << "2 models x 2 epochs";
  for (const auto& r : records) {
    // Samples so far: an epoch is one pass over the producer's 64 images.
    EXPECT_EQ(r["samples"].get<int64_t>(), 64 * r["epoch"].get<int64_t>()) << r.dump();
    EXPECT_TRUE(r["test_accuracy"].is_null());
  }
  EXPECT_TRUE(path_exists(dir.file("out/model-1/model.pt")));
  EXPECT_NE(run.out.find("best train acc"), std::string::npos) << run.out;
  // Halving ranks by test accuracy, which a shared loader cannot give.
  auto halving = run_colo(dir, "sweep " + dir.write("halving.toml", common + "[sweep.halving]\nrungs = [1]\n"));
  EXPECT_EQ(halving.status, 2) << halving.err;
  EXPECT_NE(halving.err.find("sweep.halving"), std::string::npos) << halving.err;
}

TEST(ColoSweep, BadSweepFileIsRejectedAndWritesNothing) {
  TempDir dir;
  dir.write("s.toml", sweep_text(dir.file("out"), "lr = [0.1]\nwidth = [0.5]\n"));
  auto run = run_colo(dir, "sweep " + dir.file("s.toml"));
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("sweep.axes.width: only resnet has a width multiplier"), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("out")));
  std::string no_data = sweep_text(dir.file("out2"), "lr = [0.1]\n");
  no_data.replace(no_data.find("name = \"synthetic\""), 18, "name = \"fashion-mnist\"\npath = \"" + dir.file("none") + "\"");
  no_data.replace(no_data.find("shape = [1, 6, 6]\nclasses = 4\ntrain_size = 256\ntest_size = 128\n"), 63, "");
  dir.write("d.toml", no_data);
  auto no_dataset = run_colo(dir, "sweep " + dir.file("d.toml"));
  EXPECT_EQ(no_dataset.status, 2) << no_dataset.err;
  EXPECT_NE(no_dataset.err.find(dir.file("none")), std::string::npos) << no_dataset.err;
  EXPECT_FALSE(path_exists(dir.file("out2"))) << "nothing written when the data is missing";
  auto missing = run_colo(dir, "sweep " + dir.file("nope.toml"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("nope.toml"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace colo
