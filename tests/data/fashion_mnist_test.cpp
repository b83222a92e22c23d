// Reads the real Fashion-MNIST from Debian's dataset-fashion-mnist package.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "colo/data/mnist_reader.h"

namespace colo::data {
namespace {

TEST(FashionMnist, RealFilesHaveSixtyThousandTrainAndTenThousandTestImages) {
  Dataset d = read_mnist_dir("/usr/share/datasets/fashion-mnist", "fashion-mnist");
  EXPECT_EQ(d.train.inputs.sizes(), (std::vector<int64_t>{60000, 1, 28, 28}));
  EXPECT_EQ(d.test.inputs.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  // Fashion-MNIST is balanced: 6,000 training and 1,000 test images per class.
  EXPECT_TRUE(at::bincount(d.train.labels).equal(at::full({10}, 6000, at::kLong)));
  EXPECT_TRUE(at::bincount(d.test.labels).equal(at::full({10}, 1000, at::kLong)));
  // Its published mean pixel is about 0.286.
  EXPECT_NEAR(d.train.inputs.to(at::kDouble).mean().item<double>() / 255.0, 0.286, 0.002);
}

}  // namespace
}  // namespace colo::data
