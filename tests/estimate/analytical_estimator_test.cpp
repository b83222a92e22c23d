#include "colo/estimate/analytical_estimator.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "colo/estimate/job_model.h"
#include "colo/estimate/probe_estimator.h"
#include "colo/gpu/torch_device.h"
#include "support/temp_dir.h"

namespace colo::estimate {
namespace {

std::string spec_text(const std::string& model, const std::string& optimizer, int batch) {
  return "device = \"cpu\"\nbatch_size = " + std::to_string(batch) +
         "\neval_batch_size = 64\n[model]\n" + model +
         "\n[data]\nname = \"synthetic\"\nshape = [1, 28, 28]\nclasses = 10\ntrain_size = 256\n"
         "test_size = 32\n[optimizer]\n" + optimizer + "\n";
}

train::TrainSpec write_spec(const testing::TempDir& dir, const std::string& text) {
  return train::parse_train_spec(dir.write("spec.toml", text));
}

// Bytes of every distinct storage some op saves for backward, at `batch`.
int64_t saved_bytes(const TrainingGraph& g, int64_t batch) {
  std::set<int> storages;
  int64_t total = 0;
  for (const GraphOp& op : g.ops) {
    for (int t : op.saved) {
      int s = g.tensors[t].storage;
      if (s >= 0 && storages.insert(s).second) total += g.tensors[s].bytes(batch);
    }
    total += op.extra_saved_fixed + op.extra_saved_per_sample * batch;
  }
  return total;
}

TEST(AnalyticalEstimator, MlpGraphMatchesHandCount) {
  testing::TempDir dir;
  auto spec = write_spec(dir, spec_text("name = \"mlp\"\nwidths = [32]", "name = \"sgd\"", 8));
  JobModel job = describe_job(spec);
  // 784*32 + 32 + 32*10 + 10 float parameters.
  EXPECT_EQ(job.graph.total_parameter_bytes(), (784 * 32 + 32 + 32 * 10 + 10) * 4);
  EXPECT_EQ(job.parameter_count, 784 * 32 + 32 + 32 * 10 + 10);
  // Saved for backward: the ReLU output (read again by the second layer) and
  // the log-softmax output; the input batch is data, the weights parameters.
  for (int64_t batch : {8, 100, 1000}) {
    EXPECT_EQ(saved_bytes(job.graph, batch), batch * 32 * 4 + batch * 10 * 4) << "batch " << batch;
  }
  EXPECT_TRUE(job.graph.unmodelled.empty());
  EXPECT_EQ(job.summary.linear_layers, 2);
  EXPECT_EQ(job.summary.activation_layers, 1);
  EXPECT_EQ(job.summary.input_elements, 784);
}

TEST(AnalyticalEstimator, BreakdownCountsParametersGradientsAndAdamState) {
  testing::TempDir dir;
  auto spec = write_spec(dir, spec_text("name = \"mlp\"\nwidths = [32]", "name = \"adam\"\nlr = 0.001", 8));
  DeviceProfile profile{"test", 100 << 20, 0};
  MemoryEstimate e = analytical_estimate(describe_job(spec), profile);
  ASSERT_TRUE(e.known);
  ASSERT_TRUE(e.breakdown);
  // Each parameter is one allocation rounded to 512 bytes:
  // 100352 + 128->512 + 1280->1536 + 40->512.
  const int64_t rounded = 100352 + 512 + 1536 + 512;
  EXPECT_EQ(e.breakdown->parameters, rounded);
  EXPECT_EQ(e.breakdown->optimizer, 2 * rounded) << "Adam keeps two moments per parameter";
  EXPECT_EQ(e.breakdown->context, 100 << 20);
  EXPECT_EQ(e.bytes, e.breakdown->total());

  auto sgd = write_spec(dir, spec_text("name = \"mlp\"\nwidths = [32]", "name = \"sgd\"\nmomentum = 0.9", 8));
  EXPECT_EQ(analytical_estimate(describe_job(sgd), profile).breakdown->optimizer, rounded)
      << "SGD with momentum keeps one buffer per parameter";
}

TEST(AnalyticalEstimator, GrowsWithTheBatch) {
  testing::TempDir dir;
  DeviceProfile profile{"test", 0, 0};
  auto small = write_spec(dir, spec_text("name = \"lenet\"", "name = \"sgd\"", 16));
  int64_t at_16 = analytical_estimate(describe_job(small), profile).bytes;
  auto big = write_spec(dir, spec_text("name = \"lenet\"", "name = \"sgd\"", 256));
  int64_t at_256 = analytical_estimate(describe_job(big), profile).bytes;
  EXPECT_GT(at_256, at_16);
  // LeNet's max pooling keeps int64 indices: one extra saved tensor per pool.
  JobModel job = describe_job(big);
  int64_t pools = 0;
  for (const GraphOp& op : job.graph.ops) pools += op.extra_saved_per_sample > 0;
  EXPECT_EQ(pools, 2);
}

TEST(AnalyticalEstimator, AResidualAddHandsItsGradientToBothInputsWithoutANewOne) {
  testing::TempDir dir;
  JobModel job = describe_job(write_spec(dir, spec_text("name = \"resnet\"\ndepth = 18", "name = \"sgd\"", 8)));
  int adds = 0;
  for (const GraphOp& op : job.graph.ops) {
    if (op.name.rfind("AddBackward", 0) != 0) continue;
    ++adds;
    EXPECT_TRUE(op.new_grads.empty()) << op.name << " allocates a gradient for an input";
    EXPECT_FALSE(op.inputs.empty());
  }
  EXPECT_GE(adds, 8) << "one residual add per basic block";
}

TEST(AnalyticalEstimator, FusedArraysScaleWithTheModelCount) {
  testing::TempDir dir;
  auto spec = write_spec(dir, spec_text("name = \"mlp\"\nwidths = [32]", "name = \"sgd\"\nmomentum = 0.9", 8));
  JobModel one = describe_job(spec);
  JobModel four = describe_array_job(spec, 4);
  EXPECT_EQ(four.graph.total_parameter_bytes(), 4 * one.graph.total_parameter_bytes());
  for (int64_t batch : {8, 512}) {
    EXPECT_EQ(saved_bytes(four.graph, batch), 4 * saved_bytes(one.graph, batch))
        << "every model keeps its own activations, batch " << batch;
  }
  DeviceProfile profile{"test", 0, 0, {}};
  auto e1 = analytical_estimate(one, profile), e4 = analytical_estimate(four, profile);
  // Stacked [4, 32, 784], [4, 32], [4, 10, 32], [4, 10] floats, each rounded to 512 bytes.
  const int64_t stacked = 401408 + 512 + 5120 + 512;
  EXPECT_EQ(e4.breakdown->parameters, stacked);
  EXPECT_EQ(e4.breakdown->optimizer, stacked) << "one momentum buffer per stacked parameter";
  EXPECT_GE(e4.bytes, e1.bytes);
}

TEST(AnalyticalEstimator, EstimatesInSeveralThreadsAtOnceEqualThoseMadeOneAtATime) {
  // colo run estimates its `colo train` jobs' specs in background threads,
  // several at once (sched/model_estimates.h).
  testing::TempDir dir;
  std::vector<std::string> models = {"name = \"lenet\"", "name = \"resnet\"\ndepth = 18",
                                     "name = \"transformer\"\nlayers = 2\nd_model = 32\nheads = 4",
                                     "name = \"mlp\"\nwidths = [64]"};
  std::vector<EstimateRequest> requests;
  for (size_t i = 0; i < models.size(); ++i) {
    EstimateRequest request;
    request.spec = train::parse_train_spec(
        dir.write("spec" + std::to_string(i) + ".toml", spec_text(models[i], "name = \"adam\"", 32)));
    requests.push_back(request);
  }
  AnalyticalEstimator estimator(DeviceProfile{"test", 0, 0});
  std::vector<int64_t> alone;
  for (const auto& request : requests) alone.push_back(estimator.estimate(request).bytes);
  std::vector<std::vector<int64_t>> together(requests.size());
  std::vector<std::string> errors(requests.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < requests.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        for (int round = 0; round < 3; ++round) together[i].push_back(estimator.estimate(requests[i]).bytes);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(errors[i], "") << models[i];
    EXPECT_EQ(together[i], std::vector<int64_t>(3, alone[i])) << models[i];
  }
}

TEST(AnalyticalEstimator, AnswersUnknownWithoutASpec) {
  AnalyticalEstimator estimator(DeviceProfile{"test", 0, 0});
  EXPECT_FALSE(estimator.estimate(EstimateRequest{}).known);
}

TEST(ProbeEstimator, NeedsACudaDevice) {
  if (gpu::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  testing::TempDir dir;
  EstimateRequest request;
  request.spec = write_spec(dir, spec_text("name = \"lenet\"", "name = \"sgd\"", 16));
  MemoryEstimate e = ProbeEstimator().estimate(request);
  EXPECT_FALSE(e.known);
  EXPECT_NE(e.reason.find("no CUDA device"), std::string::npos) << e.reason;
}

}  // namespace
}  // namespace colo::estimate
