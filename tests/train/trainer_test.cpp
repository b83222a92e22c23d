#include "colo/train/trainer.h"


#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "support/temp_dir.h"

namespace colo::train {
namespace {

// Random crops and flips, to check that augmentation is reproducible too.
const std::string kAugment = "augment = true\n";

// A small, quick, learnable problem; dropout exercises the RNG.
std::string spec_text(const std::string& output, int epochs, const std::string& extra = "",
                      const std::string& extra_data = "") {
  return "seed = 7\ndevice = \"cpu\"\noutput = \"" + output + "\"\nepochs = " +
         std::to_string(epochs) + "\nbatch_size = 32\n" + extra +
         "[model]\nname = \"mlp\"\nwidths = [32]\ndropout = 0.2\n"
         "[data]\nname = \"synthetic\"\nshape = [1, 6, 6]\nclasses = 4\ntrain_size = 512\n"
         "test_size = 256\n" + extra_data +
         "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n";
}

TrainSpec write_spec(const testing::TempDir& dir, const std::string& name, const std::string& text) {
  return parse_train_spec(dir.write(name, text));
}

std::vector<at::Tensor> parameters_of(Trainer& trainer) {
  std::vector<at::Tensor> copies;
  for (const auto& p : trainer.model().parameters()) copies.push_back(p.detach().clone());
  return copies;
}

void expect_same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << "parameter " << i;
}

TEST(Trainer, LearnsAndWritesOneRecordPerEpoch) {
  testing::TempDir dir;
  Trainer trainer(write_spec(dir, "s.toml", spec_text(dir.file("out"), 2)));
  auto records = trainer.run(false);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_LT(records[1].loss, records[0].loss);
  EXPECT_GT(records.back().test_accuracy, 0.9);
  auto lines = read_json_lines(dir.file("out/metrics.jsonl"));
  ASSERT_EQ(lines.size(), 2u);
  for (const char* key : {"epoch", "loss", "train_accuracy", "test_accuracy", "samples_per_s", "wall_s"}) {
    EXPECT_TRUE(lines[1].contains(key)) << key;
  }
  EXPECT_EQ(lines[1]["epoch"], 2);
  EXPECT_EQ(lines[1]["step"], 32);  // 2 epochs x 16 batches
  EXPECT_GE(lines[1]["test_accuracy"].get<double>(), 0.0);
  EXPECT_LE(lines[1]["test_accuracy"].get<double>(), 1.0);
  EXPECT_FALSE(lines[1].contains("peak_mem_bytes")) << "no device memory on the CPU";
  EXPECT_TRUE(path_exists(dir.file("out/checkpoint.pt")));
  EXPECT_TRUE(path_exists(dir.file("out/spec.toml")));
}

TEST(Trainer, SameSeedGivesIdenticalRunsOnCpu) {
  testing::TempDir dir;
  Trainer a(write_spec(dir, "a.toml", spec_text(dir.file("a"), 1, "", kAugment)));
  Trainer b(write_spec(dir, "b.toml", spec_text(dir.file("b"), 1, "", kAugment)));
  auto ra = a.run(false), rb = b.run(false);
  EXPECT_EQ(ra[0].loss, rb[0].loss);
  expect_same(parameters_of(a), parameters_of(b));
}

TEST(Trainer, DifferentSeedGivesDifferentModels) {
  testing::TempDir dir;
  Trainer a(write_spec(dir, "a.toml", spec_text(dir.file("a"), 1, "", kAugment)));
  std::string other = spec_text(dir.file("b"), 1, "", kAugment);
  other.replace(other.find("seed = 7"), 8, "seed = 8");
  Trainer b(write_spec(dir, "b.toml", other));
  EXPECT_FALSE(parameters_of(a)[0].equal(parameters_of(b)[0]));
}

TEST(Trainer, ResumeContinuesExactlyWhereTheCheckpointLeftOff) {
  testing::TempDir dir;
  Trainer straight(write_spec(dir, "s.toml", spec_text(dir.file("straight"), 3, "", kAugment)));
  straight.run(false);

  Trainer first(write_spec(dir, "p1.toml", spec_text(dir.file("split"), 2, "", kAugment)));
  first.run(false);
  Trainer resumed(write_spec(dir, "p2.toml", spec_text(dir.file("split"), 3, "", kAugment)));
  auto records = resumed.run(true);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].epoch, 3);
  expect_same(parameters_of(straight), parameters_of(resumed));
  auto lines = read_json_lines(dir.file("split/metrics.jsonl"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2]["loss"].get<double>(), read_json_lines(dir.file("straight/metrics.jsonl"))[2]["loss"].get<double>());
}

TEST(Trainer, ResumeWithoutCheckpointIsAnInputError) {
  testing::TempDir dir;
  Trainer trainer(write_spec(dir, "s.toml", spec_text(dir.file("out"), 1)));
  EXPECT_THROW(trainer.run(true), InputError);
}

TEST(Trainer, StepBudgetStopsMidEpoch) {
  testing::TempDir dir;
  Trainer trainer(write_spec(dir, "s.toml", spec_text(dir.file("out"), 5, "max_steps = 20\n")));
  auto records = trainer.run(false);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records.back().step, 20);
}

TEST(Trainer, UnknownDeviceIsAnInputErrorNamingTheField) {
  testing::TempDir dir;
  std::string text = spec_text(dir.file("out"), 1);
  text.replace(text.find("\"cpu\""), 5, "\"tpu\"");
  try {
    Trainer trainer(write_spec(dir, "s.toml", text));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "device");
  }
  EXPECT_FALSE(path_exists(dir.file("out")));
}

TEST(Trainer, CudaOnAMachineWithoutItIsAnInputError) {
  if (at::hasCUDA()) GTEST_SKIP() << "this machine has CUDA";
  testing::TempDir dir;
  std::string text = spec_text(dir.file("out"), 1);
  text.replace(text.find("\"cpu\""), 5, "\"cuda:0\"");
  EXPECT_THROW(Trainer(write_spec(dir, "s.toml", text)), InputError);
}

}  // namespace
}  // namespace colo::train
