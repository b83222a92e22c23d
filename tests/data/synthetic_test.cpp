#include "colo/data/synthetic.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace colo::data {
namespace {

TEST(Synthetic, HasTheRequestedShapeSizesAndClasses) {
  DataSpec spec;
  spec.name = "synthetic";
  spec.shape = {3, 8, 8};
  spec.classes = 7;
  spec.train_size = 300;
  spec.test_size = 50;
  Dataset d = make_synthetic(spec);
  EXPECT_EQ(d.train.inputs.sizes(), (std::vector<int64_t>{300, 3, 8, 8}));
  EXPECT_EQ(d.test.size(), 50);
  EXPECT_EQ(d.train.inputs.scalar_type(), at::kFloat);
  EXPECT_GE(d.train.labels.min().item<int64_t>(), 0);
  EXPECT_LT(d.train.labels.max().item<int64_t>(), 7);
  EXPECT_EQ(d.shape.classes, 7);
}

TEST(Synthetic, SameSeedSameDataOtherSeedOtherData) {
  DataSpec spec;
  spec.shape = {5};
  spec.train_size = 20;
  spec.test_size = 5;
  Dataset a = make_synthetic(spec), b = make_synthetic(spec);
  EXPECT_TRUE(a.train.inputs.equal(b.train.inputs));
  spec.seed = 1;
  EXPECT_FALSE(a.train.inputs.equal(make_synthetic(spec).train.inputs));
}

TEST(Synthetic, ClassMeansDifferSoTheTaskIsLearnable) {
  DataSpec spec;
  spec.shape = {16};
  spec.classes = 2;
  spec.train_size = 4000;
  Dataset d = make_synthetic(spec);
  at::Tensor m0 = d.train.inputs.index({d.train.labels == 0}).mean(0);
  at::Tensor m1 = d.train.inputs.index({d.train.labels == 1}).mean(0);
  EXPECT_GT((m0 - m1).norm().item<double>(), 0.5);
}

TEST(Synthetic, TokenSequencesStayInsideTheVocabulary) {
  DataSpec spec;
  spec.tokens = true;
  spec.vocab = 50;
  spec.shape = {12};
  spec.classes = 3;
  spec.train_size = 100;
  Dataset d = make_synthetic(spec);
  EXPECT_EQ(d.train.inputs.scalar_type(), at::kLong);
  EXPECT_EQ(d.train.inputs.sizes(), (std::vector<int64_t>{100, 12}));
  EXPECT_GE(d.train.inputs.min().item<int64_t>(), 0);
  EXPECT_LT(d.train.inputs.max().item<int64_t>(), 50);
  EXPECT_TRUE(d.shape.tokens);
}

}  // namespace
}  // namespace colo::data
