#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/models/model_registry.h"

namespace colo::models {
namespace {

const data::InputShape kFashion{{1, 28, 28}, 10, false, 0};
const data::InputShape kCifar{{3, 32, 32}, 10, false, 0};

ModelSpec spec_named(const std::string& name) {
  ModelSpec spec;
  spec.name = name;
  return spec;
}

int64_t count(const ModelSpec& spec, const data::InputShape& shape) {
  return parameter_count(*build_model(spec, shape));
}

TEST(Mlp, ParameterCountMatchesLayerArithmetic) {
  // 784*256+256 + 256*128+128 + 128*10+10
  EXPECT_EQ(count(spec_named("mlp"), kFashion), 235146);
}

TEST(Mlp, OutputsOneLogitPerClass) {
  auto model = build_model(spec_named("mlp"), kFashion);
  EXPECT_EQ(model->forward(at::randn({5, 1, 28, 28})).sizes(), (std::vector<int64_t>{5, 10}));
}

TEST(LeNet, HasLeNet5ParameterCountOnFashionMnist) {
  // conv 156 + conv 2416 + fc 48120 + fc 10164 + fc 850
  EXPECT_EQ(count(spec_named("lenet"), kFashion), 61706);
  EXPECT_EQ(count(spec_named("lenet"), kCifar), 62006);  // 3-channel first conv
}

TEST(LeNet, OutputsOneLogitPerClassForBothImageSizes) {
  EXPECT_EQ(build_model(spec_named("lenet"), kFashion)->forward(at::randn({3, 1, 28, 28})).sizes(),
            (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(build_model(spec_named("lenet"), kCifar)->forward(at::randn({3, 3, 32, 32})).sizes(),
            (std::vector<int64_t>{3, 10}));
}

TEST(ResNet, CifarResNetsHaveTheirKnownParameterCounts) {
  ModelSpec spec = spec_named("resnet");
  spec.depth = 18;
  EXPECT_EQ(count(spec, kCifar), 11173962);
  spec.depth = 34;
  EXPECT_EQ(count(spec, kCifar), 21282122);
  spec.depth = 50;
  EXPECT_EQ(count(spec, kCifar), 23520842);
}

TEST(ResNet, WidthMultiplierShrinksChannels) {
  ModelSpec spec = spec_named("resnet");
  spec.width = 0.5;
  int64_t half = count(spec, kCifar);
  EXPECT_GT(half, 11173962 / 5);
  EXPECT_LT(half, 11173962 / 3);
}

TEST(ResNet, ForwardAndBackwardRunWithBatchNorm) {
  ModelSpec spec = spec_named("resnet");
  spec.depth = 50;
  auto model = build_model(spec, kCifar);
  at::Tensor logits = model->forward(at::randn({2, 3, 32, 32}));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 10}));
  logits.sum().backward();
  for (const auto& p : model->parameters()) ASSERT_TRUE(p.grad().defined());
  EXPECT_GT(model->buffers().size(), 0u) << "BatchNorm running statistics are buffers";
}

int64_t transformer_count(int64_t tokens, int64_t token_features, int64_t d, int64_t layers,
                          int64_t ff, int64_t classes) {
  int64_t block = 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + 2 * d + (d * ff + ff) + (ff * d + d);
  return (token_features * d + d) + tokens * d + layers * block + 2 * d + (d * classes + classes);
}

TEST(Transformer, PatchModelParameterCountMatchesFormula) {
  ModelSpec spec = spec_named("transformer");  // 2 layers, d 64, 4 heads, patch 4
  EXPECT_EQ(count(spec, kFashion), transformer_count(49, 16, 64, 2, 256, 10));
  EXPECT_EQ(count(spec, kFashion), 104970);
}

TEST(Transformer, ClassifiesPatchesAndTokens) {
  ModelSpec spec = spec_named("transformer");
  EXPECT_EQ(build_model(spec, kCifar)->forward(at::randn({2, 3, 32, 32})).sizes(),
            (std::vector<int64_t>{2, 10}));
  data::InputShape tokens{{16}, 3, true, 100};
  auto model = build_model(spec, tokens);
  EXPECT_EQ(model->forward(at::randint(0, 100, {4, 16}, at::kLong)).sizes(),
            (std::vector<int64_t>{4, 3}));
  // Embedding 100*64 replaces the patch projection; 16 positions.
  EXPECT_EQ(parameter_count(*model),
            transformer_count(16, 0, 64, 2, 256, 3) - 64 + 100 * 64);
}

TEST(Transformer, PatchSizeThatDoesNotDivideTheImageIsAnInputError) {
  ModelSpec spec = spec_named("transformer");
  spec.patch_size = 5;
  try {
    build_model(spec, kFashion);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "model.patch_size");
  }
}

TEST(Models, ImageModelsRejectTokenData) {
  data::InputShape tokens{{16}, 3, true, 100};
  EXPECT_THROW(build_model(spec_named("lenet"), tokens), InputError);
  EXPECT_THROW(build_model(spec_named("resnet"), tokens), InputError);
  EXPECT_THROW(build_model(spec_named("mlp"), tokens), InputError);
}

}  // namespace
}  // namespace colo::models
