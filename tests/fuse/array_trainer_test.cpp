#include "colo/fuse/array_trainer.h"
#include "colo/fuse/side_by_side.h"

#include <map>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/fuse/autocast_guard.h"
#include "colo/data/dataset_registry.h"
#include "colo/train/trainer.h"
#include "support/temp_dir.h"

namespace colo::fuse {
namespace {

std::string spec_text(const std::string& output, double lr, const std::string& schedule) {
  return "seed = 3\ndevice = \"cpu\"\noutput = \"" + output + "\"\nepochs = 2\nbatch_size = 32\n"
         "[model]\nname = \"mlp\"\nwidths = [16]\n"
         "[data]\nname = \"synthetic\"\nshape = [1, 6, 6]\nclasses = 4\ntrain_size = 200\n"
         "test_size = 128\nprefetch = 0\n"
         "[optimizer]\nname = \"sgd\"\nlr = " + std::to_string(lr) + "\nmomentum = 0.9\n" + schedule;
}

// Each model of an array ends where `colo train` of its own spec ends: same
// initialisation, same batches (the short last one included), same schedule.
TEST(ArrayTrainer, EachModelEndsWhereItsOwnTrainingEnds) {
  testing::TempDir dir;
  std::vector<train::TrainSpec> specs;
  const double lrs[] = {0.01, 0.05, 0.2};
  for (int i = 0; i < 3; ++i) {
    std::string name = "s" + std::to_string(i);
    specs.push_back(train::parse_train_spec(dir.write(
        name + ".toml", spec_text(dir.file(name), lrs[i], "[schedule]\nname = \"cosine\"\n"))));
  }
  data::Dataset dataset = data::load_dataset(specs[0].data);
  ArrayTrainer array(specs, dataset, c10::Device(c10::kCPU));
  std::map<int64_t, std::vector<train::EpochRecord>> records;
  array.run([&](int64_t model, const train::EpochRecord& r) { records[model].push_back(r); });

  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(records[i].size(), 2u);
    train::Trainer alone(specs[static_cast<size_t>(i)]);
    auto expected = alone.run(false);
    auto fused = array.extract(i);
    auto fused_params = fused->named_parameters();
    double diff = 0, norm = 0;
    for (const auto& item : alone.model().named_parameters()) {
      diff += (fused_params[item.key()] - item.value()).pow(2).sum().item<double>();
      norm += item.value().pow(2).sum().item<double>();
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-5) << "model " << i;
    EXPECT_NEAR(records[i][1].test_accuracy, expected[1].test_accuracy, 1e-9) << "model " << i;
    EXPECT_NEAR(records[i][1].loss, expected[1].loss, 1e-4) << "model " << i;
    EXPECT_NEAR(records[i][1].lr, expected[1].lr, 1e-12) << "model " << i;
  }
}

TEST(Bf16AutocastGuard, MatmulsRunInBfloat16OnlyWhileItLives) {
  at::Tensor a = at::randn({4, 4});
  {
    Bf16AutocastGuard on(c10::kCPU, true);
    EXPECT_TRUE(Bf16AutocastGuard::active(c10::kCPU));
    EXPECT_EQ(at::mm(a, a).scalar_type(), at::kBFloat16);
    EXPECT_EQ(at::baddbmm(a.unsqueeze(0), a.unsqueeze(0), a.unsqueeze(0)).scalar_type(), at::kBFloat16);
    EXPECT_EQ((a + a).scalar_type(), at::kFloat);
  }
  EXPECT_FALSE(Bf16AutocastGuard::active(c10::kCPU));
  EXPECT_EQ(at::mm(a, a).scalar_type(), at::kFloat);
  Bf16AutocastGuard off(c10::kCPU, false);
  EXPECT_FALSE(Bf16AutocastGuard::active(c10::kCPU));
}

// bf16 autocast changes the arithmetic (the result is not float32's) but not
// the training: the parameters stay within a few percent and stay finite.
TEST(ArrayTrainer, Bf16AutocastTrainsCloseToFloat32) {
  testing::TempDir dir;
  std::vector<train::TrainSpec> specs;
  for (int i = 0; i < 2; ++i) {
    specs.push_back(train::parse_train_spec(dir.write(
        "s" + std::to_string(i) + ".toml", spec_text(dir.file("o"), 0.05 * (i + 1), ""))));
  }
  data::Dataset dataset = data::load_dataset(specs[0].data);
  ArrayTrainer exact(specs, dataset, c10::Device(c10::kCPU));
  ArrayOptions bf16_options;
  bf16_options.bf16_autocast = true;
  ArrayTrainer bf16(specs, dataset, c10::Device(c10::kCPU), bf16_options);
  std::map<int64_t, std::vector<train::EpochRecord>> records;
  exact.run([](int64_t, const train::EpochRecord&) {});
  bf16.run([&](int64_t model, const train::EpochRecord& r) { records[model].push_back(r); });
  EXPECT_FALSE(Bf16AutocastGuard::active(c10::kCPU));
  for (int64_t i = 0; i < 2; ++i) {
    auto expected = exact.extract(i)->named_parameters();
    double diff = 0, norm = 0;
    for (const auto& item : bf16.extract(i)->named_parameters()) {
      ASSERT_TRUE(item.value().isfinite().all().item<bool>()) << item.key();
      EXPECT_EQ(item.value().scalar_type(), at::kFloat) << "master weights stay float32";
      diff += (item.value() - expected[item.key()]).pow(2).sum().item<double>();
      norm += expected[item.key()].pow(2).sum().item<double>();
    }
    double relative = std::sqrt(diff / norm);
    EXPECT_GT(relative, 1e-4) << "model " << i << ": bf16 autocast had no effect";
    EXPECT_LT(relative, 0.05) << "model " << i;
    ASSERT_EQ(records[i].size(), 2u);
    EXPECT_TRUE(std::isfinite(records[i][1].loss));
  }
}

TEST(ArrayTrainer, HalvingStopsTheWorstModelsAtARung) {
  testing::TempDir dir;
  std::vector<train::TrainSpec> specs;
  const double lrs[] = {1e-4, 0.1, 2e-4, 0.05};
  for (int i = 0; i < 4; ++i) {
    specs.push_back(train::parse_train_spec(dir.write(
        "s" + std::to_string(i) + ".toml", spec_text(dir.file("o"), lrs[i], ""))));
  }
  data::Dataset dataset = data::load_dataset(specs[0].data);
  ArrayTrainer array(specs, dataset, c10::Device(c10::kCPU));
  std::map<int64_t, std::vector<train::EpochRecord>> records;
  std::vector<int64_t> stopped;
  Halving halving{{1}, 0.5};
  array.run([&](int64_t model, const train::EpochRecord& r) { records[model].push_back(r); },
            &halving, [&](int64_t model, int64_t epoch) {
              EXPECT_EQ(epoch, 1);
              stopped.push_back(model);
            });
  ASSERT_EQ(stopped.size(), 2u);
  EXPECT_EQ(array.models(), 2);
  double worst_kept = 1, best_stopped = 0;
  for (int64_t m = 0; m < 4; ++m) {
    bool was_stopped = std::find(stopped.begin(), stopped.end(), m) != stopped.end();
    EXPECT_EQ(records[m].size(), was_stopped ? 1u : 2u) << "model " << m;
    double acc = records[m][0].test_accuracy;
    if (was_stopped) best_stopped = std::max(best_stopped, acc);
    else worst_kept = std::min(worst_kept, acc);
  }
  EXPECT_GE(worst_kept, best_stopped);
  EXPECT_THROW(array.extract(stopped[0]), std::invalid_argument);
}

}  // namespace
}  // namespace colo::fuse

namespace colo::fuse {
namespace {

// Two arrays of different architectures from one data pass: each ends where
// it ends when trained on its own.
TEST(SideBySide, ArraysOfDifferentModelsShareOneDataPassAndMatchTrainingApart) {
  testing::TempDir dir;
  std::string mlp = spec_text(dir.file("a"), 0.05, "");
  std::string wide = mlp;
  wide.replace(wide.find("widths = [16]"), 13, "widths = [32, 8]");
  std::vector<train::TrainSpec> small{train::parse_train_spec(dir.write("a.toml", mlp))};
  std::vector<train::TrainSpec> big{train::parse_train_spec(dir.write("b.toml", wide)),
                                    train::parse_train_spec(dir.write("c.toml", wide))};
  big[1].optimizer.lr = 0.2;
  data::Dataset dataset = data::load_dataset(small[0].data);
  ArrayTrainer a(small, dataset, c10::Device(c10::kCPU)), b(big, dataset, c10::Device(c10::kCPU));
  std::map<std::pair<size_t, int64_t>, int> epochs;
  train_side_by_side({&a, &b}, [&](size_t array, int64_t model, const train::EpochRecord&) {
    ++epochs[{array, model}];
  });
  EXPECT_EQ(epochs.size(), 3u);
  for (const auto& [key, count] : epochs) EXPECT_EQ(count, 2);

  ArrayTrainer a_alone(small, dataset, c10::Device(c10::kCPU)), b_alone(big, dataset, c10::Device(c10::kCPU));
  a_alone.run({});
  b_alone.run({});
  auto same = [](const models::ClassifierPtr& x, const models::ClassifierPtr& y) {
    auto yp = y->named_parameters();
    for (const auto& item : x->named_parameters()) {
      if (!item.value().allclose(yp[item.key()], 1e-6, 1e-7)) return false;
    }
    return true;
  };
  EXPECT_TRUE(same(a.extract(0), a_alone.extract(0)));
  EXPECT_TRUE(same(b.extract(0), b_alone.extract(0)));
  EXPECT_TRUE(same(b.extract(1), b_alone.extract(1)));
  EXPECT_FALSE(same(b.extract(0), b.extract(1))) << "the two big models differ (different rates)";
}

// Arrays over different data, batch sizes and epoch counts, each over its
// own pass in one process: each runs its own epochs and ends where it ends
// when trained on its own.
TEST(SideBySide, ArraysOverTheirOwnDataEachEndWhereTheyEndApart) {
  testing::TempDir dir;
  std::string other = spec_text(dir.file("b"), 0.2, "");
  other.replace(other.find("shape = [1, 6, 6]"), 17, "shape = [1, 8, 8]");
  other.replace(other.find("epochs = 2"), 10, "epochs = 3");
  other.replace(other.find("batch_size = 32"), 15, "batch_size = 24");
  std::vector<train::TrainSpec> a_spec{train::parse_train_spec(dir.write("a.toml", spec_text(dir.file("a"), 0.05, "")))};
  std::vector<train::TrainSpec> b_spec{train::parse_train_spec(dir.write("b.toml", other))};
  data::Dataset a_data = data::load_dataset(a_spec[0].data), b_data = data::load_dataset(b_spec[0].data);
  ArrayTrainer a(a_spec, a_data, c10::Device(c10::kCPU)), b(b_spec, b_data, c10::Device(c10::kCPU));
  std::map<size_t, std::vector<train::EpochRecord>> records;
  train_each_side_by_side({&a, &b}, [&](size_t array, int64_t, const train::EpochRecord& r) {
    records[array].push_back(r);
  });
  ASSERT_EQ(records[0].size(), 2u);
  ASSERT_EQ(records[1].size(), 3u);
  EXPECT_EQ(records[0].back().step, 2 * 7) << "200 samples in batches of 32: 7 a pass";
  EXPECT_EQ(records[1].back().step, 3 * 9) << "200 samples in batches of 24: 9 a pass";

  ArrayTrainer a_alone(a_spec, a_data, c10::Device(c10::kCPU)), b_alone(b_spec, b_data, c10::Device(c10::kCPU));
  std::vector<train::EpochRecord> a_records, b_records;
  a_alone.run([&](int64_t, const train::EpochRecord& r) { a_records.push_back(r); });
  b_alone.run([&](int64_t, const train::EpochRecord& r) { b_records.push_back(r); });
  EXPECT_DOUBLE_EQ(records[0].back().loss, a_records.back().loss);
  EXPECT_DOUBLE_EQ(records[1].back().loss, b_records.back().loss);
  EXPECT_DOUBLE_EQ(records[1].back().test_accuracy, b_records.back().test_accuracy);
  EXPECT_NE(records[0].back().loss, records[1].back().loss);
}

TEST(SideBySide, ArraysWithDifferentBatchSizesAreRefused) {
  testing::TempDir dir;
  auto spec = train::parse_train_spec(dir.write("a.toml", spec_text(dir.file("a"), 0.05, "")));
  auto other = spec;
  other.batch_size = 64;
  data::Dataset dataset = data::load_dataset(spec.data);
  ArrayTrainer a({spec}, dataset, c10::Device(c10::kCPU)), b({other}, dataset, c10::Device(c10::kCPU));
  EXPECT_THROW(train_side_by_side({&a, &b}, {}), InputError);
}

}  // namespace
}  // namespace colo::fuse
