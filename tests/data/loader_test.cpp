#include "colo/data/loader.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace colo::data {
namespace {

// Inputs [n, 1, 4, 4] whose every pixel is the sample's index.
Split indexed_split(int64_t n) {
  at::Tensor ids = at::arange(n, at::kFloat);
  return Split{ids.view({n, 1, 1, 1}).expand({n, 1, 4, 4}).contiguous(), at::arange(n, at::kLong)};
}

std::vector<int64_t> epoch_labels(DataLoader& loader, int64_t epoch) {
  loader.start_epoch(epoch);
  std::vector<int64_t> labels;
  while (auto batch = loader.next()) {
    for (int64_t i = 0; i < batch->labels.size(0); ++i) labels.push_back(batch->labels[i].item<int64_t>());
  }
  return labels;
}

TEST(DataLoader, EachEpochVisitsEverySampleOnce) {
  LoaderOptions options;
  options.batch_size = 8;
  DataLoader loader(indexed_split(30), options);
  EXPECT_EQ(loader.batches_per_epoch(), 4);
  auto labels = epoch_labels(loader, 0);
  std::sort(labels.begin(), labels.end());
  std::vector<int64_t> expected(30);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(labels, expected);
}

TEST(DataLoader, OrderDependsOnSeedAndEpochOnly) {
  LoaderOptions options;
  options.batch_size = 7;
  options.seed = 11;
  DataLoader a(indexed_split(50), options), b(indexed_split(50), options);
  EXPECT_EQ(epoch_labels(a, 3), epoch_labels(b, 3));
  EXPECT_NE(epoch_labels(a, 0), epoch_labels(a, 1));
  options.seed = 12;
  DataLoader c(indexed_split(50), options);
  EXPECT_NE(epoch_labels(a, 3), epoch_labels(c, 3));
}

TEST(DataLoader, PrefetchGivesTheSameBatchesAsSynchronousLoading) {
  LoaderOptions options;
  options.batch_size = 5;
  options.augment = true;
  options.crop_padding = 1;
  options.prefetch = 3;
  DataLoader prefetching(indexed_split(23), options);
  options.prefetch = 0;
  DataLoader synchronous(indexed_split(23), options);
  prefetching.start_epoch(2);
  synchronous.start_epoch(2);
  while (true) {
    auto x = prefetching.next(), y = synchronous.next();
    ASSERT_EQ(x.has_value(), y.has_value());
    if (!x) break;
    EXPECT_TRUE(x->inputs.equal(y->inputs));
  }
}

TEST(DataLoader, InputsAndLabelsStayPaired) {
  LoaderOptions options;
  options.batch_size = 6;
  DataLoader loader(indexed_split(20), options);
  loader.start_epoch(0);
  while (auto batch = loader.next()) {
    EXPECT_TRUE(batch->inputs.select(1, 0).select(1, 0).select(1, 0).to(at::kLong).equal(batch->labels));
  }
}

TEST(DataLoader, DropLastSkipsThePartialBatch) {
  LoaderOptions options;
  options.batch_size = 8;
  options.drop_last = true;
  DataLoader loader(indexed_split(30), options);
  EXPECT_EQ(epoch_labels(loader, 0).size(), 24u);
}

TEST(DataLoader, BytesAreScaledAndNormalisedPerChannel) {
  Split split{at::full({4, 2, 3, 3}, 255, at::kByte), at::zeros({4}, at::kLong)};
  split.inputs.select(1, 1).fill_(0);
  LoaderOptions options;
  options.batch_size = 4;
  options.mean = {0.5, 0.25};
  options.std = {0.5, 0.5};
  DataLoader loader(split, options);
  loader.start_epoch(0);
  auto batch = loader.next();
  EXPECT_FLOAT_EQ(batch->inputs.select(1, 0).mean().item<float>(), 1.0f);   // (1 - 0.5) / 0.5
  EXPECT_FLOAT_EQ(batch->inputs.select(1, 1).mean().item<float>(), -0.5f);  // (0 - 0.25) / 0.5
}

TEST(DataLoader, ChannelStatsMatchTheData) {
  Split split{at::zeros({10, 2, 2, 2}, at::kByte), at::zeros({10}, at::kLong)};
  split.inputs.select(1, 1).fill_(51);  // 0.2 after scaling
  auto [mean, std] = channel_stats(split);
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_NEAR(mean[0], 0.0, 1e-9);
  EXPECT_NEAR(mean[1], 0.2, 1e-9);
  EXPECT_LT(std[1], 1e-3);
}

TEST(DataLoader, AugmentationCropsAndFlipsButKeepsShapeAndContent) {
  // One image with a single bright pixel: after crop+flip it moves by at
  // most `padding` (or mirrors), and is either kept or pushed out.
  at::Tensor image = at::zeros({1, 1, 8, 8});
  image[0][0][3][2] = 1.0;
  Split split{image.expand({64, 1, 8, 8}).contiguous(), at::zeros({64}, at::kLong)};
  LoaderOptions options;
  options.batch_size = 64;
  options.augment = true;
  options.crop_padding = 2;
  DataLoader loader(split, options);
  loader.start_epoch(0);
  auto batch = loader.next();
  EXPECT_EQ(batch->inputs.sizes(), (std::vector<int64_t>{64, 1, 8, 8}));
  EXPECT_LE(batch->inputs.sum(std::vector<int64_t>{1, 2, 3}).max().item<float>(), 1.0f);
  int64_t distinct = std::get<0>(at::_unique(batch->inputs.flatten(1).argmax(1))).numel();
  EXPECT_GT(distinct, 4) << "64 random crops/flips should place the pixel in many spots";
}

}  // namespace
}  // namespace colo::data
