#include "colo/train/epoch_loop.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace colo::train {
namespace {

TEST(EpochLoop, PlannedStepsIsEveryBatchCappedByMaxSteps) {
  TrainSpec spec;
  spec.epochs = 3;
  EXPECT_EQ(planned_steps(spec, 10), 30);
  spec.max_steps = 25;
  EXPECT_EQ(planned_steps(spec, 10), 25);
  spec.max_steps = 100;
  EXPECT_EQ(planned_steps(spec, 10), 30);
}

data::Split labelled_features(int64_t n) {
  at::manual_seed(3);
  return {at::randn({n, 4}), at::randint(0, 3, {n}, at::kLong)};
}

TEST(EpochLoop, EvaluatingSeveralModelsAtOnceEqualsEvaluatingEachAlone) {
  data::Split test = labelled_features(50);
  data::LoaderOptions options;
  options.batch_size = 16;
  options.shuffle = false;
  options.prefetch = 0;
  at::Tensor weights = at::randn({2, 4, 3});  // two linear "models"
  data::DataLoader together(test, options);
  auto both = evaluate_logits([&](const at::Tensor& x) { return at::matmul(x.unsqueeze(0), weights); }, together);
  ASSERT_EQ(both.size(), 2u);
  for (int64_t m = 0; m < 2; ++m) {
    data::DataLoader alone(test, options);
    auto one = evaluate_logits([&](const at::Tensor& x) { return at::matmul(x, weights[m]); }, alone);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_DOUBLE_EQ(one[0].accuracy, both[m].accuracy);
    EXPECT_NEAR(one[0].loss, both[m].loss, 1e-6);
    // Checked against a direct computation over the whole split.
    at::Tensor logits = at::matmul(test.inputs, weights[m]);
    double accuracy = logits.argmax(1).eq(test.labels).to(at::kDouble).mean().item<double>();
    double loss = at::cross_entropy_loss(logits, test.labels).item<double>();
    EXPECT_NEAR(one[0].accuracy, accuracy, 1e-12);
    EXPECT_NEAR(one[0].loss, loss, 1e-5);
  }
}

TEST(EpochLoop, RecordIsMeansOverTheEpochsSamples) {
  EpochTotals totals{2, 40, 90.0, 27, 30, 1.5, 0.01};
  EpochRecord r = epoch_record(totals, {0.8, 0.4}, c10::Device(c10::DeviceType::CPU), 2.0, 9.0);
  EXPECT_EQ(r.epoch, 3);
  EXPECT_EQ(r.step, 40);
  EXPECT_DOUBLE_EQ(r.loss, 3.0);
  EXPECT_DOUBLE_EQ(r.train_accuracy, 0.9);
  EXPECT_DOUBLE_EQ(r.samples_per_s, 20.0);
  EXPECT_DOUBLE_EQ(r.test_accuracy, 0.8);
  EXPECT_DOUBLE_EQ(r.test_loss, 0.4);
  EXPECT_FALSE(r.peak_mem_bytes.has_value());
  EXPECT_DOUBLE_EQ(r.wall_s, 9.0);
}

}  // namespace
}  // namespace colo::train
