// A fused array trained for some steps must end where N separate trainings
// end: same seeds, same hyper-parameters, same batches.

#include <cmath>
#include <limits>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "colo/core/error.h"
#include "colo/fuse/fused_classifier.h"
#include "colo/fuse/fused_optimizer.h"
#include "colo/fuse/model_array.h"
#include "colo/models/model_registry.h"
#include "colo/train/optimizer.h"

namespace colo::fuse {
namespace {

constexpr int64_t kModels = 3;
constexpr int kSteps = 4;

struct Case {
  models::ModelSpec model;
  data::InputShape shape;
  at::ScalarType dtype = at::kFloat;
};

Case mlp_case() {
  Case c;
  c.model.name = "mlp";
  c.model.widths = {32, 16};
  c.shape.sample_shape = {1, 6, 6};
  c.shape.classes = 5;
  return c;
}

Case lenet_case() {
  Case c;
  c.model.name = "lenet";
  c.shape.sample_shape = {1, 16, 16};
  c.shape.classes = 10;
  return c;
}

Case transformer_case(bool tokens) {
  Case c;
  c.model.name = "transformer";
  c.model.layers = 2;
  c.model.d_model = 16;
  c.model.heads = 2;
  c.model.patch_size = 4;
  c.shape.classes = 5;
  if (tokens) {
    c.shape.tokens = true;
    c.shape.vocab = 20;
    c.shape.sample_shape = {6};
  } else {
    c.shape.sample_shape = {1, 8, 8};
  }
  return c;
}

Case resnet_case() {
  Case c;
  c.model.name = "resnet";
  c.model.depth = 18;
  c.model.width = 0.25;
  c.shape.sample_shape = {3, 8, 8};
  c.shape.classes = 4;
  return c;
}

// Model i's optimiser: the same kind, different rates and decays.
train::OptimizerSpec optimizer_for(const std::string& name, int64_t i) {
  train::OptimizerSpec spec;
  spec.name = name;
  spec.lr = (name == "sgd" ? 0.02 : 0.0005) * static_cast<double>(i + 1);
  spec.weight_decay = 0.01 * static_cast<double>(i);
  spec.momentum = name == "sgd" ? 0.3 * static_cast<double>(i) : 0.0;
  spec.beta1 = 0.9 - 0.05 * static_cast<double>(i);
  spec.beta2 = 0.999 - 0.01 * static_cast<double>(i);
  return spec;
}

struct Batch {
  at::Tensor inputs, labels;
};

std::vector<Batch> batches(const data::InputShape& shape, at::ScalarType dtype) {
  at::manual_seed(1234);
  std::vector<Batch> out;
  std::vector<int64_t> dims{32};
  dims.insert(dims.end(), shape.sample_shape.begin(), shape.sample_shape.end());
  for (int i = 0; i < kSteps; ++i) {
    at::Tensor inputs = shape.tokens ? at::randint(shape.vocab, dims, at::kLong) : at::randn(dims).to(dtype);
    out.push_back({inputs, at::randint(shape.classes, {32}, at::kLong)});
  }
  return out;
}

models::ClassifierPtr fresh_model(const Case& c, int64_t seed) {
  at::manual_seed(static_cast<uint64_t>(100 + seed));
  auto model = models::build_model(c.model, c.shape);
  model->to(c.dtype);
  return model;
}

// Model i trained alone with torch::optim.
models::ClassifierPtr train_alone(const train::OptimizerSpec& spec,
                                  models::ClassifierPtr model, const std::vector<Batch>& data) {
  auto optimizer = train::make_optimizer(spec, model->parameters());
  model->train();
  for (const auto& batch : data) {
    at::Tensor loss = at::cross_entropy_loss(model->forward(batch.inputs), batch.labels);
    optimizer->zero_grad();
    loss.backward();
    optimizer->step();
  }
  return model;
}

// All models as one array; returns each model copied back out of the array.
std::vector<models::ClassifierPtr> train_fused(const Case& c,
                                               const std::vector<train::OptimizerSpec>& specs,
                                               const std::vector<models::ClassifierPtr>& start,
                                               const std::vector<Batch>& data) {
  auto array = build_fused_model(std::vector<models::ModelSpec>(start.size(), c.model), c.shape);
  array->to(c.dtype);
  load_models(*array, start);
  FusedOptimizer optimizer(array->parameters(), specs);
  array->train();
  for (const auto& batch : data) {
    at::Tensor logits = array->forward(batch.inputs);  // [N, B, classes]
    int64_t n = logits.size(0), b = logits.size(1);
    at::Tensor losses = at::cross_entropy_loss(logits.reshape({n * b, -1}), batch.labels.repeat({n}),
                                               {}, at::Reduction::None)
                            .view({n, b})
                            .mean(1);
    optimizer.zero_grad();
    losses.sum().backward();
    optimizer.step();
  }
  std::vector<models::ClassifierPtr> out;
  for (int64_t i = 0; i < array->models(); ++i) {
    auto model = fresh_model(c, 0);
    store_model(*array, i, *model);
    out.push_back(model);
  }
  return out;
}

// Relative difference ||a - b|| / ||b|| of the two models' parameters and
// buffers taken as one vector (per tensor, a BatchNorm bias still near zero
// would turn float rounding into a large ratio).
double relative_error(const models::Classifier& a, const models::Classifier& b) {
  auto b_params = b.named_parameters();
  auto b_buffers = b.named_buffers();
  double diff = 0, norm = 0;
  auto add = [&](const at::Tensor& x, const at::Tensor& expected) {
    at::Tensor e = expected.to(at::kDouble);
    diff += (x.to(at::kDouble) - e).pow(2).sum().item<double>();
    norm += e.pow(2).sum().item<double>();
  };
  for (const auto& item : a.named_parameters()) add(item.value(), b_params[item.key()]);
  for (const auto& item : a.named_buffers()) add(item.value(), b_buffers[item.key()]);
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-12);
}

// How far float32 rounding alone moves model i's separate training: the
// relative change of its result when its inputs change by 1e-7 (relative),
// and with `nudge_weights` the larger of that and the change when its starting
// weights do. A small ResNet can amplify rounding by orders of magnitude (a
// BatchNorm over a nearly dead channel divides by sqrt(var + 1e-5)), and
// fusion rounds the weights' updates differently, not only the inputs'
// products; no fused computation can be closer to the reference than the
// reference is to itself.
double noise_floor(const Case& c, const train::OptimizerSpec& spec, int64_t i,
                   const std::vector<Batch>& data, const models::Classifier& reference, bool nudge_weights) {
  auto noisy = data;
  at::manual_seed(99);
  for (auto& b : noisy) {
    if (b.inputs.is_floating_point()) b.inputs = b.inputs * (1 + 1e-7 * at::randn_like(b.inputs));
  }
  double floor = relative_error(*train_alone(spec, fresh_model(c, i), noisy), reference);
  if (!nudge_weights) return floor;
  auto nudged = fresh_model(c, i);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : nudged->parameters()) p.mul_(1 + 1e-7 * at::randn_like(p));
  }
  return std::max(floor, relative_error(*train_alone(spec, nudged, data), reference));
}

// Fused and separate trainings agree to 1e-5 (relative) wherever the
// separate training is itself reproducible to 1e-6 under rounding; where it
// is not, to within 10x its own noise floor. Returns how many models were
// held to the strict bound.
int expect_fused_equals_alone(const Case& c, const std::string& optimizer, bool nudge_weights = false) {
  auto data = batches(c.shape, c.dtype);
  std::vector<train::OptimizerSpec> specs;
  std::vector<models::ClassifierPtr> start;
  for (int64_t i = 0; i < kModels; ++i) {
    specs.push_back(optimizer_for(optimizer, i));
    start.push_back(fresh_model(c, i));
  }
  auto fused = train_fused(c, specs, start, data);
  int strict = 0;
  for (int64_t i = 0; i < kModels; ++i) {
    auto alone = train_alone(specs[i], fresh_model(c, i), data);
    // The models moved: a fused result equal to its start would be vacuous.
    EXPECT_GT(relative_error(*fresh_model(c, i), *alone), 1e-4);
    double floor = c.dtype == at::kFloat ? noise_floor(c, specs[i], i, data, *alone, nudge_weights) : 0.0;
    double bound = floor < 1e-6 ? 1e-5 : 10 * floor;
    strict += floor < 1e-6 ? 1 : 0;
    EXPECT_LT(relative_error(*fused[i], *alone), bound)
        << c.model.name << " " << optimizer << " model " << i << " (noise floor " << floor << ")";
  }
  return strict;
}

// One intra-op thread: with several, ATen splits the reductions of a fused
// layer and of a single model's layer differently, and the orders of
// summation (not the fusion) then move ResNet/BatchNorm results by up to
// 6e-4 relative, varying from run to run.
class FusedTraining : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    threads_ = at::get_num_threads();
    at::set_num_threads(1);
  }
  void TearDown() override { at::set_num_threads(threads_); }

 private:
  int threads_ = 1;
};

// Which models are well-conditioned depends on the platform's float kernels
// (on LibTorch 2.11's CPU kernels one lenet/Adam reference is not reproducible
// to 1e-6 under rounding); at least two of three are held strictly.
TEST_P(FusedTraining, MlpArrayMatchesSeparateTraining) {
  EXPECT_GE(expect_fused_equals_alone(mlp_case(), GetParam()), 2);
}
TEST_P(FusedTraining, LenetArrayMatchesSeparateTraining) {
  EXPECT_GE(expect_fused_equals_alone(lenet_case(), GetParam()), 2);
}
TEST_P(FusedTraining, ResnetWithBatchNormMatchesSeparateTraining) {
  // A small ResNet is often chaotic in float32 (its floor nudges the weights
  // too: on some CPUs' kernels a reference reproducible under input rounding
  // still moves 1e-4 under weight rounding): at least one model strict.
  EXPECT_GE(expect_fused_equals_alone(resnet_case(), GetParam(), true), 1);
}
// Token inputs cannot be perturbed, so every float32 model is held to 1e-5.
TEST_P(FusedTraining, TransformerOverTokensMatchesSeparateTraining) {
  EXPECT_EQ(expect_fused_equals_alone(transformer_case(true), GetParam()), kModels);
}
// Over image patches AdamW's float32 references are not reproducible to 1e-6
// under rounding (each held to 10x its floor); float64 holds all strictly.
TEST_P(FusedTraining, TransformerOverPatchesMatchesSeparateTraining) {
  expect_fused_equals_alone(transformer_case(false), GetParam());
  Case c = transformer_case(false);
  c.dtype = at::kDouble;
  EXPECT_EQ(expect_fused_equals_alone(c, GetParam()), kModels);
}
// In float64 rounding is far below any amplification: every model, strict.
TEST_P(FusedTraining, ResnetInFloat64MatchesSeparateTrainingForEveryModel) {
  Case c = resnet_case();
  c.dtype = at::kDouble;
  EXPECT_EQ(expect_fused_equals_alone(c, GetParam()), kModels);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, FusedTraining, ::testing::Values("sgd", "adam", "adamw"));

TEST(FusedTrainingIsolation, OneModelsNanLeavesTheOthersExact) {
  Case c = lenet_case();
  auto data = batches(c.shape, c.dtype);
  std::vector<train::OptimizerSpec> specs;
  std::vector<models::ClassifierPtr> start;
  for (int64_t i = 0; i < kModels; ++i) {
    specs.push_back(optimizer_for("sgd", i));
    start.push_back(fresh_model(c, i));
  }
  {
    torch::NoGradGuard no_grad;
    start[1]->named_parameters()["conv1.weight"].view({-1})[0] = std::numeric_limits<float>::quiet_NaN();
  }
  auto fused = train_fused(c, specs, start, data);
  EXPECT_TRUE(fused[1]->named_parameters()["fc3.weight"].isnan().any().item<bool>());
  for (int64_t i : {0, 2}) {
    auto alone = train_alone(specs[i], fresh_model(c, i), data);
    EXPECT_FALSE(fused[i]->named_parameters()["fc3.weight"].isnan().any().item<bool>());
    EXPECT_LT(relative_error(*fused[i], *alone), 1e-5) << "model " << i;
  }
}

TEST(FusedModel, RejectsSpecsOfDifferentArchitectures) {
  Case c = mlp_case();
  models::ModelSpec other = c.model;
  other.widths = {64};
  EXPECT_THROW(build_fused_model({c.model, other}, c.shape), InputError);
}

TEST(FusedOptimizer, RejectsMixedOptimisersInOneArray) {
  std::vector<at::Tensor> params{at::zeros({2, 3})};
  EXPECT_THROW(FusedOptimizer(params, {optimizer_for("sgd", 0), optimizer_for("adam", 1)}),
               std::invalid_argument);
}

TEST(ModelArray, SelectKeepsTheChosenModels) {
  Case c = mlp_case();
  std::vector<models::ClassifierPtr> start;
  for (int64_t i = 0; i < 4; ++i) start.push_back(fresh_model(c, i));
  auto array = build_fused_model(std::vector<models::ModelSpec>(4, c.model), c.shape);
  load_models(*array, start);
  auto compact = build_fused_model(std::vector<models::ModelSpec>(2, c.model), c.shape);
  select_models(*array, {3, 1}, *compact);
  auto out = fresh_model(c, 0);
  store_model(*compact, 0, *out);
  EXPECT_EQ(relative_error(*out, *start[3]), 0.0);
  store_model(*compact, 1, *out);
  EXPECT_EQ(relative_error(*out, *start[1]), 0.0);
}

}  // namespace
}  // namespace colo::fuse

namespace colo::fuse {
namespace {

// The optimiser alone, on fixed gradients: model i's slice moves as
// torch::optim moves the same tensor, on the CPU (ATen) and on a GPU, where
// colo's kernel updates every parameter, a model-outermost NHWC one (as
// colo.fuse stores convolutions) and a nesterov SGD among them.
class FusedOptimizerUpdate : public ::testing::TestWithParam<std::string> {};

void expect_update_matches_torch_optim(const std::string& name, bool nesterov, const at::Device& device) {
  at::manual_seed(7);
  const std::vector<std::vector<int64_t>> shapes = {{kModels, 5, 4}, {kModels, 6, 3, 3, 3}, {kModels, 20000}};
  std::vector<train::OptimizerSpec> specs;
  for (int64_t i = 0; i < kModels; ++i) {
    specs.push_back(optimizer_for(name, i));
    specs.back().nesterov = nesterov;
    if (nesterov) specs.back().momentum = 0.3 * static_cast<double>(i + 1);  // nesterov needs momentum
  }
  std::vector<at::Tensor> fused, starts;
  std::vector<std::vector<at::Tensor>> grads(kSteps);
  for (const auto& shape : shapes) {
    starts.push_back(at::randn(shape));
    for (auto& step : grads) step.push_back(at::randn(shape));
    at::Tensor p = starts.back().clone().to(device);
    if (shape.size() == 5) p = p.permute({0, 1, 3, 4, 2}).contiguous().permute({0, 1, 4, 2, 3});  // NHWC storage
    fused.push_back(p.requires_grad_(true));
  }
  FusedOptimizer optimizer(fused, specs);
  for (const auto& step : grads) {
    optimizer.zero_grad();
    for (size_t k = 0; k < fused.size(); ++k) fused[k].mutable_grad().copy_(step[k]);
    optimizer.step();
  }
  EXPECT_EQ(optimizer.own_kernel_parameters(), device.is_cuda() ? static_cast<int64_t>(shapes.size()) : 0);
  for (size_t k = 0; k < shapes.size(); ++k) {
    for (int64_t i = 0; i < kModels; ++i) {
      at::Tensor alone = starts[k][i].clone().requires_grad_(true);
      auto reference = train::make_optimizer(specs[static_cast<size_t>(i)], {alone});
      for (const auto& step : grads) {
        reference->zero_grad();
        alone.mutable_grad() = step[k][i].clone();
        reference->step();
      }
      at::Tensor moved = fused[k][i].detach().cpu();
      EXPECT_GT((alone - starts[k][i]).abs().max().item<double>(), 1e-4) << "the reference moved";
      double error = ((moved - alone).norm() / alone.norm()).item<double>();
      EXPECT_LT(error, 1e-6) << name << " tensor " << k << " model " << i << " on " << device;
    }
  }
}

TEST_P(FusedOptimizerUpdate, MatchesTorchOptimOnFixedGradients) {
  expect_update_matches_torch_optim(GetParam(), false, at::kCPU);
  if (GetParam() == "sgd") expect_update_matches_torch_optim(GetParam(), true, at::kCPU);
}

TEST_P(FusedOptimizerUpdate, OwnCudaKernelMatchesTorchOptimOnFixedGradients) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  expect_update_matches_torch_optim(GetParam(), false, at::kCUDA);
  if (GetParam() == "sgd") expect_update_matches_torch_optim(GetParam(), true, at::kCUDA);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, FusedOptimizerUpdate, ::testing::Values("sgd", "adam", "adamw"));

}  // namespace
}  // namespace colo::fuse
