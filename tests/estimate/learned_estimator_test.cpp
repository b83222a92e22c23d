#include "colo/estimate/learned_estimator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "colo/core/error.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::estimate {
namespace {

// A fixture data set whose "measured" peak follows a known law:
// 16 bytes per parameter (weights, grads, Adam) + 4 bytes per activation.
std::vector<LearnedSample> fixture(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<LearnedSample> out;
  for (int i = 0; i < count; ++i) {
    ModelSummary s;
    s.family = "mlp";
    s.optimizer = "adam";
    s.parameters = static_cast<int64_t>(std::exp2(12 + 12 * u(rng)));
    s.activations_per_sample = static_cast<int64_t>(std::exp2(8 + 10 * u(rng)));
    s.batch_size = static_cast<int64_t>(std::exp2(4 + 6 * u(rng)));
    s.input_elements = 784;
    s.linear_layers = 3;
    s.activation_layers = 2;
    int64_t bytes = 16 * s.parameters + 4 * s.activations_per_sample * s.batch_size;
    out.push_back({s, bytes});
  }
  return out;
}

TEST(LearnedEstimator, LearnsAFixtureLawAndPredictsUnseenRows) {
  LearnedOptions options;
  options.epochs = 1500;
  auto estimator = LearnedEstimator::fit(fixture(300, 1), options, DeviceProfile{"test", 0, 0});
  auto unseen = fixture(50, 2);
  std::vector<double> errors;
  for (const auto& row : unseen) {
    double predicted = static_cast<double>(estimator->predict_allocator_bytes(row.summary));
    errors.push_back(std::abs(predicted - row.allocator_peak_bytes) / row.allocator_peak_bytes);
  }
  std::sort(errors.begin(), errors.end());
  EXPECT_LT(errors[errors.size() / 2], 0.15) << "median relative error on unseen fixture rows";
}

TEST(LearnedEstimator, SavesAndLoadsTheSamePredictions) {
  LearnedOptions options;
  options.epochs = 50;
  auto estimator = LearnedEstimator::fit(fixture(40, 3), options, DeviceProfile{"test", 7, 0});
  testing::TempDir dir;
  estimator->save(dir.file("learned.pt"));
  auto loaded = LearnedEstimator::load(dir.file("learned.pt"), DeviceProfile{"test", 7, 0});
  for (const auto& row : fixture(5, 4)) {
    EXPECT_EQ(loaded->predict_allocator_bytes(row.summary), estimator->predict_allocator_bytes(row.summary));
    EXPECT_EQ(loaded->predict_bin(row.summary), estimator->predict_bin(row.summary));
  }
  EstimateRequest request;
  request.summary = fixture(1, 5).front().summary;
  MemoryEstimate e = loaded->estimate(request);
  EXPECT_TRUE(e.known);
  EXPECT_EQ(e.bytes, loaded->predict_allocator_bytes(*request.summary) + 7);
}

TEST(LearnedEstimator, RejectsFilesThatAreNotEstimators) {
  testing::TempDir dir;
  EXPECT_NE(testing::input_error_of([&] { LearnedEstimator::load(dir.file("missing.pt")); }).find("no such file"),
            std::string::npos);
  dir.write("junk.pt", "not a model");
  EXPECT_NE(testing::input_error_of([&] { LearnedEstimator::load(dir.file("junk.pt")); })
                .find("expected a learned estimator"),
            std::string::npos);
  EXPECT_THROW(LearnedEstimator::fit(fixture(3, 1), LearnedOptions{}), std::invalid_argument);
}

TEST(ModelSummaryFile, ReadsAGoodFileAndNamesTheBadField) {
  testing::TempDir dir;
  ModelSummary s = read_model_summary(dir.write(
      "ok.toml",
      "family = \"cnn\"\nparameters = 11000000\nactivations_per_sample = 500000\nbatch_size = 128\n"
      "input_shape = [3, 32, 32]\noptimizer = \"momentum\"\n[layers]\nconv = 20\nnorm = 20\nlinear = 1\n"));
  EXPECT_EQ(s.family, "cnn");
  EXPECT_EQ(s.parameters, 11000000);
  EXPECT_EQ(s.input_elements, 3 * 32 * 32);
  EXPECT_EQ(s.conv_layers, 20);
  EXPECT_EQ(s.features().size(), ModelSummary::feature_names().size());

  auto error_of = [&](const std::string& text) {
    return testing::input_error_of([&] { read_model_summary(dir.write("bad.toml", text)); });
  };
  const std::string rest = "activations_per_sample = 5\nbatch_size = 8\ninput_shape = [4]\n";
  EXPECT_NE(error_of(rest).find("parameters"), std::string::npos);
  EXPECT_NE(error_of("parameters = 0\n" + rest).find("parameters"), std::string::npos);
  EXPECT_NE(error_of("parameters = 10\n" + rest + "optimizer = \"lbfgs\"\n").find("optimizer"), std::string::npos);
  EXPECT_NE(error_of("parameters = 10\n" + rest + "[layers]\nlstm = 2\n").find("lstm"), std::string::npos);
  EXPECT_NE(error_of("parameters = 10\nbatch_size = 8\ninput_shape = [4]\n").find("activations_per_sample"),
            std::string::npos);
}

}  // namespace
}  // namespace colo::estimate
