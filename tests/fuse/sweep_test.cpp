#include "colo/fuse/sweep.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/paths.h"
#include "colo/fuse/sweep_progress.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::fuse {
namespace {

using testing::input_error_of;

std::string base_text(const std::string& output, const std::string& model = "name = \"mlp\"\nwidths = [16]\n") {
  return "seed = 1\ndevice = \"cpu\"\noutput = \"" + output + "\"\nepochs = 2\nbatch_size = 32\n"
         "[model]\n" + model +
         "[data]\nname = \"synthetic\"\nshape = [1, 6, 6]\nclasses = 4\ntrain_size = 256\ntest_size = 128\n"
         "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n";
}

TEST(SweepSpec, GridIsTheProductOfTheAxesWithValuesApplied) {
  testing::TempDir dir;
  auto spec = parse_sweep_spec(dir.write("s.toml", base_text(dir.file("o")) +
      "[sweep]\n[sweep.axes]\nlr = [0.01, 0.1, 0.3]\nseed = [4, 5]\nwidths = [[8], [32, 8]]\n"));
  auto configs = expand_sweep(spec);
  ASSERT_EQ(configs.size(), 12u);
  std::set<std::string> seen;
  for (const auto& c : configs) {
    seen.insert(c.values.dump());
    EXPECT_DOUBLE_EQ(c.spec.optimizer.lr, c.values["lr"].get<double>());
    EXPECT_EQ(c.spec.seed, c.values["seed"].get<uint64_t>());
    EXPECT_EQ(c.spec.model.widths, c.values["widths"].get<std::vector<int64_t>>());
    EXPECT_DOUBLE_EQ(c.spec.optimizer.momentum, 0.9) << "fields no axis names stay as the base spec says";
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(configs[0].values["lr"], 0.01);
  EXPECT_EQ(configs[11].values["lr"], 0.3) << "first axis slowest";
  EXPECT_FALSE(spec.bf16_autocast) << "float32 unless asked";
  auto bf16 = parse_sweep_spec(dir.write("b.toml", base_text(dir.file("o")) +
      "[sweep]\nbf16_autocast = true\n[sweep.axes]\nlr = [0.1]\n"));
  EXPECT_TRUE(bf16.bf16_autocast);
}

TEST(SweepSpec, MomentumIsSgdsAloneAdamConfigurationsKeepItZero) {
  testing::TempDir dir;
  auto spec = parse_sweep_spec(dir.write("s.toml", base_text(dir.file("o")) +
      "[sweep]\n[sweep.axes]\noptimizer = [\"sgd\", \"adam\"]\nmomentum = [0.0, 0.9]\n"));
  for (const auto& c : expand_sweep(spec)) {
    const double asked = c.values["momentum"].get<double>();
    EXPECT_DOUBLE_EQ(c.spec.optimizer.momentum, c.spec.optimizer.name == "sgd" ? asked : 0.0) << c.values.dump();
  }
}

TEST(SweepSpec, RandomSamplingStaysInItsRangesAndIsReproducible) {
  testing::TempDir dir;
  std::string text = base_text(dir.file("o")) +
      "[sweep]\nsampling = \"random\"\ncount = 50\nseed = 3\n[sweep.axes]\n"
      "lr = { min = 1e-4, max = 1e-1, log = true }\noptimizer = [\"sgd\", \"adam\"]\n";
  auto a = expand_sweep(parse_sweep_spec(dir.write("s.toml", text)));
  auto b = expand_sweep(parse_sweep_spec(dir.write("s.toml", text)));
  ASSERT_EQ(a.size(), 50u);
  int below_1e3 = 0, adam = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double lr = a[i].spec.optimizer.lr;
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1e-1);
    below_1e3 += lr < 1e-3;
    adam += a[i].spec.optimizer.name == "adam";
    EXPECT_EQ(a[i].values, b[i].values);
  }
  EXPECT_GT(below_1e3, 5) << "log sampling puts a third of draws below 1e-3";
  EXPECT_GT(adam, 10);
  EXPECT_LT(adam, 40);
}

TEST(SweepSpec, BadSweepsAreRejectedWithTheField) {
  testing::TempDir dir;
  auto error = [&](const std::string& sweep, const std::string& model = "name = \"mlp\"\n") {
    return input_error_of([&] { parse_sweep_spec(dir.write("s.toml", base_text(dir.file("o"), model) + sweep)); });
  };
  EXPECT_NE(error("").find("missing required table [sweep]"), std::string::npos);
  EXPECT_NE(error("[sweep]\n[sweep.axes]\nlearning_rate = [0.1]\n").find("sweep.axes.learning_rate: unknown axis"),
            std::string::npos);
  EXPECT_NE(error("[sweep]\n[sweep.axes]\nwidths = [[8]]\n", "name = \"lenet\"\n").find("only mlp has hidden widths"),
            std::string::npos);
  EXPECT_NE(error("[sweep]\n[sweep.axes]\nlr = { min = 0.1, max = 1.0 }\n").find("ranges need sampling = \"random\""),
            std::string::npos);
  EXPECT_NE(error("[sweep]\nsampling = \"random\"\n[sweep.axes]\nlr = [0.1]\n").find("sweep.count"), std::string::npos);
  EXPECT_NE(error("[sweep]\n[sweep.axes]\nlr = [-0.1]\n").find("sweep.axes.lr: expected a learning rate"),
            std::string::npos);
  EXPECT_NE(error("[sweep]\nhalving = { rungs = [2, 1] }\n[sweep.axes]\nlr = [0.1]\n").find("ascending"),
            std::string::npos);
  EXPECT_NE(error("[sweep]\nhalving = { rung = [1] }\n[sweep.axes]\nlr = [0.1]\n").find("sweep.halving.rung: unknown"),
            std::string::npos);
  EXPECT_NE(error("[sweep]\nhalving = { rungs = [50] }\n[sweep.axes]\nlr = [0.1]\n").find("epochs before the last"),
            std::string::npos);
  EXPECT_NE(error("[sweep]\n[sweep.axes]\noptimizer = [\"lion\"]\n").find("sweep.axes.optimizer"), std::string::npos);
  // What colo train refuses of a configuration's spec: nesterov without momentum.
  EXPECT_NE(error("nesterov = true\n[sweep]\n[sweep.axes]\nmomentum = [0.9, 0.0]\n")
                .find("sweep.axes.momentum: expected momentum > 0 with optimizer.nesterov = true"),
            std::string::npos);
  EXPECT_NE(error("[sweep]\nbf16_autocast = \"yes\"\n[sweep.axes]\nlr = [0.1]\n").find("sweep.bf16_autocast"),
            std::string::npos);
}

TEST(Sweep, TrainsArraysWritesEveryModelAndRanksThem) {
  testing::TempDir dir;
  auto spec = parse_sweep_spec(dir.write("s.toml", base_text(dir.file("out")) +
      "[sweep]\nmax_array = 2\n[sweep.axes]\nlr = [0.0001, 0.05, 0.2]\noptimizer = [\"sgd\", \"adam\"]\n"));
  auto result = run_sweep(spec);
  ASSERT_EQ(result.models.size(), 6u);
  EXPECT_EQ(result.arrays, 4) << "sgd and adam apart, each group of 3 cut into arrays of at most 2";
  for (size_t i = 1; i < result.models.size(); ++i) {
    EXPECT_GE(result.models[i - 1].test_accuracy, result.models[i].test_accuracy);
  }
  EXPECT_GT(result.models.front().test_accuracy, 0.8);
  for (int k = 0; k < 6; ++k) {
    std::string model_dir = dir.file("out/model-" + std::to_string(k));
    EXPECT_EQ(read_json_lines(model_dir + "/metrics.jsonl").size(), 2u) << k;
    EXPECT_TRUE(path_exists(model_dir + "/model.pt")) << k;
    auto config = nlohmann::json::parse(read_file(model_dir + "/config.json"));
    EXPECT_EQ(config["shuffle_seed"], 1) << "the array's batch order, so colo train can repeat model " << k;
  }
  EXPECT_EQ(read_json_lines(dir.file("out/sweep.jsonl")).size(), 12u);
  auto results = nlohmann::json::parse(read_file(dir.file("out/results.json")));
  EXPECT_EQ(results["models"].size(), 6u);
}

// Counts what a sweep reports instead of printing it.
class CountingObserver : public SweepObserver {
 public:
  void on_start(size_t configurations, const std::string&, const std::string&, const std::string&) override {
    started = configurations;
  }
  void on_array(size_t, size_t, size_t models, const std::string&) override { array_sizes.push_back(models); }
  void on_epoch(int64_t model, size_t, const train::EpochRecord& record) override {
    epochs_of[model] = record.epoch;
  }
  void on_arrays_done() override { ++passes; }
  void on_note(const std::string&) override {}
  void on_done(const SweepResult& result) override { finished = result.models.size(); }
  size_t started = 0, finished = 0, passes = 0;
  std::vector<size_t> array_sizes;
  std::map<int64_t, int64_t> epochs_of;
};

TEST(Sweep, ProgressGoesToTheObserverGiven) {
  testing::TempDir dir;
  auto spec = parse_sweep_spec(dir.write("s.toml", base_text(dir.file("out")) +
      "[sweep]\nmax_array = 2\n[sweep.axes]\nlr = [0.01, 0.05, 0.1]\n"));
  CountingObserver observer;
  run_sweep(spec, &observer);
  EXPECT_EQ(observer.started, 3u);
  EXPECT_EQ(observer.array_sizes, (std::vector<size_t>{2, 1}));
  EXPECT_EQ(observer.passes, 2u);
  EXPECT_EQ(observer.finished, 3u);
  ASSERT_EQ(observer.epochs_of.size(), 3u);
  for (const auto& [model, epoch] : observer.epochs_of) EXPECT_EQ(epoch, 2) << model;
}

TEST(Sweep, SideBySideTrainsEveryArrayInOnePassWithTheSameResults) {
  testing::TempDir dir;
  std::string axes = "[sweep.axes]\nlr = [0.01, 0.05, 0.2]\nwidths = [[16], [32, 8]]\n";
  auto apart = run_sweep(parse_sweep_spec(dir.write("a.toml", base_text(dir.file("a")) + "[sweep]\nmax_array = 2\n" + axes)));
  auto together = run_sweep(parse_sweep_spec(dir.write(
      "b.toml", base_text(dir.file("b")) + "[sweep]\nmax_array = 2\nside_by_side = true\n" + axes)));
  ASSERT_EQ(apart.models.size(), together.models.size());
  EXPECT_EQ(together.arrays, 4);
  for (size_t i = 0; i < apart.models.size(); ++i) {
    EXPECT_EQ(apart.models[i].index, together.models[i].index);
    EXPECT_NEAR(apart.models[i].test_accuracy, together.models[i].test_accuracy, 1e-9);
    EXPECT_NEAR(apart.models[i].loss, together.models[i].loss, 1e-5);
  }
}

TEST(Sweep, AnArrayThatRunsOutOfMemoryIsSplitAndRetrainedFromScratch) {
  testing::TempDir dir;
  std::string axes = "[sweep.axes]\nlr = [0.01, 0.05, 0.1, 0.2]\n";
  auto whole = run_sweep(parse_sweep_spec(dir.write("a.toml", base_text(dir.file("a")) + "[sweep]\nmax_array = 4\n" + axes)));
  ::setenv("COLO_FAULT_OOM_ABOVE", "1", 1);  // arrays of 2 or more "run out of memory" after epoch 1
  auto split = run_sweep(parse_sweep_spec(dir.write("b.toml", base_text(dir.file("b")) + "[sweep]\nmax_array = 4\n" + axes)));
  ::unsetenv("COLO_FAULT_OOM_ABOVE");
  EXPECT_EQ(whole.arrays, 1);
  EXPECT_EQ(split.arrays, 4) << "4 -> 2 + 2 -> 1 + 1 + 1 + 1";
  EXPECT_EQ(split.array_sizes, (std::vector<int64_t>{1, 1, 1, 1}));
  ASSERT_EQ(split.models.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    // Each model's metrics start again with the retry: two epochs, no leftovers.
    auto records = read_json_lines(dir.file("b/model-" + std::to_string(k) + "/metrics.jsonl"));
    ASSERT_EQ(records.size(), 2u) << k;
    EXPECT_EQ(records[0]["epoch"], 1);
    EXPECT_TRUE(path_exists(dir.file("b/model-" + std::to_string(k) + "/model.pt")));
  }
  // Trained alone, each model ends as it did inside the whole array.
  for (size_t i = 0; i < whole.models.size(); ++i) {
    EXPECT_EQ(whole.models[i].index, split.models[i].index);
    EXPECT_NEAR(whole.models[i].loss, split.models[i].loss, 1e-4);
  }
  int splits = 0;
  for (const auto& line : read_json_lines(dir.file("b/sweep.jsonl"))) splits += line.value("event", "") == "oom_split";
  EXPECT_EQ(splits, 3);
}

}  // namespace
}  // namespace colo::fuse
