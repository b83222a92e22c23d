#include "colo/estimate/allocation_recorder.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include "colo/estimate/job_model.h"
#include "colo/estimate/step_simulation.h"
#include "support/temp_dir.h"

namespace colo::estimate {
namespace {

TEST(CpuAllocationRecorder, RecordsThisThreadsAllocationsAndFreesInOrder) {
  std::vector<CpuAllocationEvent> events;
  {
    CpuAllocationRecorder recorder;
    at::Tensor a = at::empty({1000});
    { at::Tensor b = at::empty({10}, at::kLong); }
    a = at::Tensor();
    events = recorder.events();
    EXPECT_THROW(CpuAllocationRecorder second, std::runtime_error);
  }
  ASSERT_EQ(events.size(), 4u);
  EXPECT_TRUE(events[0].allocate);
  EXPECT_EQ(events[0].bytes, 4000);
  EXPECT_EQ(events[1].bytes, 80);
  EXPECT_FALSE(events[2].allocate);
  EXPECT_EQ(events[2].id, events[1].id);
  EXPECT_EQ(events[3].id, events[0].id);
  // The allocator is back: tensors made now are not recorded anywhere.
  at::Tensor after = at::ones({4});
  EXPECT_EQ(after.sum().item<float>(), 4.0f);
}

// oneDNN takes its buffers through raw_allocate, which needs a DataPtr whose
// context is its data: recorded like any allocation, and a bf16 model's
// evaluation need not switch oneDNN off (100x slower matrix products).
TEST(CpuAllocationRecorder, RecordsRawAllocationsAsOneDnnMakesThem) {
  std::vector<CpuAllocationEvent> events;
  {
    CpuAllocationRecorder recorder;
    c10::Allocator* allocator = c10::GetCPUAllocator();
    void* buffer = allocator->raw_allocate(4096);
    static_cast<char*>(buffer)[4095] = 1;
    allocator->raw_deallocate(buffer);
    at::Tensor tensor = at::empty({16});
    events = recorder.events();
  }
  ASSERT_EQ(events.size(), 3u);
  EXPECT_TRUE(events[0].allocate);
  EXPECT_EQ(events[0].bytes, 4096);
  EXPECT_FALSE(events[1].allocate);
  EXPECT_EQ(events[1].id, events[0].id);
  EXPECT_EQ(events[2].bytes, 64);
}

train::TrainSpec spec(const testing::TempDir& dir, const std::string& model) {
  return train::parse_train_spec(dir.write(
      "spec.toml", "device = \"cpu\"\nbatch_size = 8\neval_batch_size = 16\n[model]\n" + model +
                       "\n[data]\nname = \"synthetic\"\nshape = [1, 28, 28]\nclasses = 10\ntrain_size = 64\n"
                       "test_size = 16\n[optimizer]\nname = \"sgd\"\n"));
}

// Per-sample sizes of the allocations live right after the first allocation
// of `per_sample` bytes per sample (empty if there is none).
std::multiset<int64_t> live_at(const std::vector<EvaluationAllocation>& events, int64_t per_sample) {
  std::map<int64_t, int64_t> live;
  for (const auto& e : events) {
    if (!e.allocate) {
      live.erase(e.id);
      continue;
    }
    live[e.id] = e.per_sample_bytes;
    if (e.per_sample_bytes == per_sample) {
      std::multiset<int64_t> sizes;
      for (const auto& [id, size] : live) sizes.insert(size);
      return sizes;
    }
  }
  return {};
}

// Ids renumbered in order of allocation, so two recordings compare.
std::vector<std::tuple<bool, int64_t, int64_t, int64_t>> renumbered(const std::vector<EvaluationAllocation>& events) {
  std::map<int64_t, int64_t> number;
  std::vector<std::tuple<bool, int64_t, int64_t, int64_t>> out;
  for (const auto& e : events) {
    if (e.allocate) number.emplace(e.id, static_cast<int64_t>(number.size()));
    out.emplace_back(e.allocate, number.at(e.id), e.fixed_bytes, e.per_sample_bytes);
  }
  return out;
}

// oneDNN's convolutions copy their input and output in its own layout, which
// no GPU kernel does: with it on, a ResNet-50's evaluation replayed 3-5% low.
// An fp32 model is recorded the same whatever the process's setting.
TEST(EvaluationAllocations, AResNetsEvaluationIsRecordedAlikeWithOneDnnOnAndOff) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this LibTorch has no oneDNN";
  testing::TempDir dir;
  train::TrainSpec resnet = spec(dir, "name = \"resnet\"\ndepth = 18");
  const bool before = at::globalContext().userEnabledMkldnn();
  at::globalContext().setUserEnabledMkldnn(true);
  JobModel with_one_dnn = describe_job(resnet);
  EXPECT_TRUE(at::globalContext().userEnabledMkldnn());  // put back after the recording
  at::globalContext().setUserEnabledMkldnn(false);
  JobModel without = describe_job(resnet);
  at::globalContext().setUserEnabledMkldnn(before);
  ASSERT_FALSE(without.graph.evaluation.empty());
  EXPECT_FALSE(with_one_dnn.graph.reduced_precision);
  EXPECT_EQ(renumbered(with_one_dnn.graph.evaluation), renumbered(without.graph.evaluation));
}

// A bf16 model keeps oneDNN for its evaluation (ATen's own bf16 matrix
// products are ~100x slower on the CPU); an fp32 one is recorded without it.
TEST(EvaluationAllocations, OnlyReducedPrecisionModelsAreRecordedWithOneDnn) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this LibTorch has no oneDNN";
  data::InputShape input{{8}, 4};
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    torch::nn::Linear layer(8, 4);
    layer->to(dtype);
    std::vector<bool> one_dnn_in_evaluation;
    LossOf loss = [&](const at::Tensor& x, const at::Tensor& y) {
      if (!at::GradMode::is_enabled()) one_dnn_in_evaluation.push_back(at::globalContext().userEnabledMkldnn());
      return at::cross_entropy_loss(layer->forward(x.to(dtype)).to(at::kFloat), y);
    };
    TrainingGraph graph = record_training_graph([](bool) {}, loss, input);
    const bool bf16 = dtype == at::kBFloat16;
    EXPECT_EQ(graph.reduced_precision, bf16);
    ASSERT_EQ(one_dnn_in_evaluation.size(), 2u);  // the two recorded batch sizes
    EXPECT_EQ(one_dnn_in_evaluation[0], bf16 && at::globalContext().userEnabledMkldnn());
  }
}

TEST(EvaluationAllocations, KeepTheAttentionScoresWhileTheFeedForwardRuns) {
  testing::TempDir dir;
  // 16 tokens of 7x7 patches, d_model 32, one head, feed-forward 64.
  JobModel job = describe_job(
      spec(dir, "name = \"transformer\"\nlayers = 1\nd_model = 32\nheads = 1\nff_dim = 64\npatch_size = 7"));
  const auto& events = job.graph.evaluation;
  ASSERT_FALSE(events.empty());
  // When the feed-forward's hidden layer is made, the block's named locals
  // are all alive: qkv, the attention scores and their softmax. Freeing each
  // tensor one op after its last reader would have let them go.
  auto live = live_at(events, 16 * 64 * 4);
  ASSERT_FALSE(live.empty());
  EXPECT_EQ(live.count(3 * 32 * 16 * 4), 1u);
  EXPECT_EQ(live.count(16 * 16 * 4), 2u);

  // The replay at a large evaluation batch puts the peak there and holds both.
  job.step.batch_size = 2;
  job.step.eval_batch_size = 4096;
  SimulatedPeak peak = simulate_training(job.graph, job.step);
  EXPECT_EQ(peak.phase, "evaluation");
  EXPECT_GE(peak.peak_allocated, 4096 * (16 * 16 * 4 + 16 * 64 * 4));
}

TEST(EvaluationAllocations, RecordConvolutionalModelsWithoutScratch) {
  testing::TempDir dir;
  JobModel job = describe_job(spec(dir, "name = \"lenet\""));
  ASSERT_FALSE(job.graph.evaluation.empty());
  // Every kept allocation has the size of a graph tensor and grows with the batch.
  for (const auto& e : job.graph.evaluation) {
    if (e.allocate) {
      EXPECT_GT(e.per_sample_bytes, 0);
    }
  }
  // conv1's output (6x28x28 floats per sample) is among them.
  EXPECT_FALSE(live_at(job.graph.evaluation, 6 * 28 * 28 * 4).empty());
}

}  // namespace
}  // namespace colo::estimate
