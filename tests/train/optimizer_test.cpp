#include "colo/train/optimizer.h"

#include <cmath>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace colo::train {
namespace {

// Runs `steps` optimiser steps on p = {1, -2} with the gradients given, and
// returns p.
std::vector<double> run(const OptimizerSpec& spec, const std::vector<std::vector<double>>& grads) {
  at::Tensor p = at::tensor({1.0, -2.0}, at::kDouble).requires_grad_(true);
  auto optimizer = make_optimizer(spec, {p});
  for (const auto& g : grads) {
    p.mutable_grad() = at::tensor(g, at::kDouble);
    optimizer->step();
  }
  return {p[0].item<double>(), p[1].item<double>()};
}

const std::vector<std::vector<double>> kGrads{{0.5, -1.0}, {0.25, 2.0}, {-1.0, 0.5}};

TEST(Sgd, MomentumNesterovAndWeightDecayMatchTheFormula) {
  OptimizerSpec spec;
  spec.name = "sgd";
  spec.lr = 0.5;
  spec.momentum = 0.9;
  spec.nesterov = true;
  spec.weight_decay = 0.1;
  std::vector<double> p{1.0, -2.0}, buf{0, 0};
  for (size_t t = 0; t < kGrads.size(); ++t) {
    for (int i = 0; i < 2; ++i) {
      double d = kGrads[t][i] + 0.1 * p[i];
      buf[i] = t == 0 ? d : 0.9 * buf[i] + d;
      p[i] -= 0.5 * (d + 0.9 * buf[i]);
    }
  }
  auto got = run(spec, kGrads);
  EXPECT_NEAR(got[0], p[0], 1e-12);
  EXPECT_NEAR(got[1], p[1], 1e-12);
}

std::vector<double> adam_reference(double lr, double wd, bool decoupled) {
  double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  std::vector<double> p{1.0, -2.0}, m{0, 0}, v{0, 0};
  for (size_t t = 1; t <= kGrads.size(); ++t) {
    for (int i = 0; i < 2; ++i) {
      double g = kGrads[t - 1][i];
      if (decoupled) {
        p[i] *= 1 - lr * wd;
      } else {
        g += wd * p[i];
      }
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  }
  return p;
}

TEST(Adam, MatchesTheFormulaWithL2WeightDecay) {
  OptimizerSpec spec;
  spec.name = "adam";
  spec.lr = 0.01;
  spec.weight_decay = 0.1;
  auto got = run(spec, kGrads), want = adam_reference(0.01, 0.1, false);
  EXPECT_NEAR(got[0], want[0], 1e-10);
  EXPECT_NEAR(got[1], want[1], 1e-10);
}

TEST(AdamW, MatchesTheFormulaWithDecoupledWeightDecay) {
  OptimizerSpec spec;
  spec.name = "adamw";
  spec.lr = 0.01;
  spec.weight_decay = 0.1;
  auto got = run(spec, kGrads), want = adam_reference(0.01, 0.1, true);
  EXPECT_NEAR(got[0], want[0], 1e-10);
  EXPECT_NEAR(got[1], want[1], 1e-10);
  EXPECT_NE(got[0], run({"adam", 0.01, 0, false, 0.1}, kGrads)[0]) << "decoupled decay differs from L2";
}

TEST(Optimizer, SetLearningRateChangesTheStep) {
  at::Tensor p = at::ones({1}, at::kDouble).requires_grad_(true);
  OptimizerSpec spec;
  auto optimizer = make_optimizer(spec, {p});
  set_learning_rate(*optimizer, 0.25);
  p.mutable_grad() = at::ones({1}, at::kDouble);
  optimizer->step();
  EXPECT_DOUBLE_EQ(p.item<double>(), 0.75);
}

}  // namespace
}  // namespace colo::train
