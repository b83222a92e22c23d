#include "colo/dist/flat_model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "colo/dist/flat_optimizer.h"
#include "colo/train/optimizer.h"

namespace colo::dist {
namespace {

torch::nn::Sequential small_model() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Linear(5, 7), torch::nn::ReLU(), torch::nn::Linear(7, 3));
}

TEST(FlatModel, ParametersAndGradientsAreViewsOfTheFlatBuffers) {
  auto model = small_model();
  auto before = model->parameters();
  std::vector<at::Tensor> copies;
  for (const auto& p : before) copies.push_back(p.detach().clone());
  FlatModel flat(*model);
  EXPECT_EQ(flat.size(), 5 * 7 + 7 + 7 * 3 + 3);
  auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(params[i].equal(copies[i]));
  flat.values().fill_(2.0);
  EXPECT_EQ(params[2].sum().item<float>(), 2.0f * 21);
  model->forward(torch::ones({4, 5})).sum().backward();
  // Backward accumulated into the flat gradient buffer.
  EXPECT_GT(flat.gradients().abs().sum().item<float>(), 0);
  EXPECT_TRUE(params[3].grad().equal(flat.gradients().narrow(0, 35 + 7 + 21, 3)));
  flat.zero_grad();
  EXPECT_EQ(params[0].grad().abs().sum().item<float>(), 0);
}

TEST(FlatModel, ShardRangesAreContiguousAndBalanced) {
  int64_t begin = 0;
  for (int64_t s = 0; s < 3; ++s) {
    auto [b, e] = shard_range(10, 3, s);
    EXPECT_EQ(b, begin);
    EXPECT_GE(e - b, 3);
    EXPECT_LE(e - b, 4);
    begin = e;
  }
  EXPECT_EQ(begin, 10);
}

// The flat optimiser moves a model exactly as torch::optim does.
void expect_matches_torch(const train::OptimizerSpec& spec) {
  auto reference = small_model();
  auto flat_model = small_model();
  auto torch_optimizer = train::make_optimizer(spec, reference->parameters());
  FlatModel flat(*flat_model);
  FlatOptimizer optimizer(flat.values(), flat.gradients(), spec);
  torch::manual_seed(9);
  for (int step = 0; step < 5; ++step) {
    at::Tensor x = torch::randn({6, 5});
    torch_optimizer->zero_grad();
    reference->forward(x).pow(2).mean().backward();
    torch_optimizer->step();
    flat.zero_grad();
    flat_model->forward(x).pow(2).mean().backward();
    optimizer.step(spec.lr);
  }
  auto a = reference->parameters(), b = flat_model->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    double scale = a[i].abs().max().item<double>();
    EXPECT_LT((a[i] - b[i]).abs().max().item<double>(), 1e-6 * scale) << spec.name << " parameter " << i;
  }
  EXPECT_EQ(optimizer.state().back().item<int64_t>(), 5);
}

TEST(FlatOptimizer, MatchesTorchOptim) {
  train::OptimizerSpec sgd;
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  sgd.weight_decay = 1e-3;
  expect_matches_torch(sgd);
  train::OptimizerSpec adam;
  adam.name = "adam";
  adam.lr = 1e-2;
  expect_matches_torch(adam);
  EXPECT_EQ(FlatOptimizer::moment_buffers(sgd), 1);
  EXPECT_EQ(FlatOptimizer::moment_buffers(adam), 2);
}

}  // namespace
}  // namespace colo::dist
