#include "colo/estimate/default_chain.h"

#include <cmath>

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/estimate/analytical_estimator.h"
#include "support/temp_dir.h"

namespace colo::estimate {
namespace {

const char* kSweep =
    "device = \"cuda\"\nepochs = 1\nbatch_size = 64\n"
    "[model]\nname = \"mlp\"\nwidths = [64]\n"
    "[data]\nname = \"synthetic\"\nshape = [1, 28, 28]\nclasses = 10\ntrain_size = 512\ntest_size = 64\n"
    "[optimizer]\nname = \"sgd\"\nlr = 0.05\n[sweep]\n[sweep.axes]\nwidths = [[64], [4096, 4096]]\n";

TEST(DefaultChain, TheWorkloadOfAColoTrainJobIgnoresLearningRateAndSeed) {
  testing::TempDir dir;
  const std::string base =
      "device = \"cuda\"\nepochs = 1\n"
      "[model]\nname = \"mlp\"\nwidths = [64]\n"
      "[data]\nname = \"synthetic\"\nshape = [1, 28, 28]\nclasses = 10\ntrain_size = 512\ntest_size = 64\n";
  dir.write("a.toml", "seed = 1\nbatch_size = 64\n" + base + "[optimizer]\nname = \"sgd\"\nlr = 0.1\n");
  dir.write("b.toml", "seed = 2\nbatch_size = 64\n" + base + "[optimizer]\nname = \"sgd\"\nlr = 0.01\n");
  dir.write("c.toml", "seed = 1\nbatch_size = 256\n" + base + "[optimizer]\nname = \"sgd\"\nlr = 0.1\n");
  auto workload = [&dir](const std::string& spec) {
    return workload_of(job_request({"colo", "train", spec}, dir.path(), std::nullopt));
  };
  EXPECT_FALSE(workload("a.toml").empty());
  EXPECT_EQ(workload("a.toml"), workload("b.toml")) << "another lr and seed train the same model at the same speed";
  EXPECT_NE(workload("a.toml"), workload("c.toml")) << "a larger batch is another workload";
  EXPECT_EQ(workload_of(job_request({"python3", "train.py"}, dir.path(), std::nullopt)), "");
}

TEST(DefaultChain, FindsTheSpecOfAColoTrainCommandInArgvOrShellLine) {
  EXPECT_EQ(train_spec_of({"/opt/colo/bin/colo", "train", "a.toml"}, "/w"), "/w/a.toml");
  EXPECT_EQ(train_spec_of({"/bin/sh", "-c", "colo train /abs/b.toml --out x"}, "/w"), "/abs/b.toml");
  EXPECT_EQ(train_spec_of({"python3", "train.py"}, "/w"), "");
}

TEST(DefaultChain, AOneConfigurationSweepCommandIsEstimatedAsThatConfiguration) {
  testing::TempDir dir;
  dir.write("s.toml", kSweep);
  auto small = sweep_config_spec_of({"colo", "sweep", "s.toml", "--only", "0", "--max-array", "1"}, dir.path());
  auto big = sweep_config_spec_of({"/bin/sh", "-c", "colo sweep s.toml --only=1 --output o"}, dir.path());
  ASSERT_TRUE(small && big);
  EXPECT_EQ(small->model.widths, (std::vector<int64_t>{64}));
  EXPECT_EQ(big->model.widths, (std::vector<int64_t>{4096, 4096}));
  // Several configurations, none named, or one the sweep lacks: no single spec.
  EXPECT_FALSE(sweep_config_spec_of({"colo", "sweep", "s.toml", "--only", "0,1"}, dir.path()));
  EXPECT_FALSE(sweep_config_spec_of({"colo", "sweep", "s.toml"}, dir.path()));
  EXPECT_FALSE(sweep_config_spec_of({"colo", "sweep", "s.toml", "--only", "7"}, dir.path()));
  // The request carries that spec, so the chain estimates what the job trains.
  EstimateRequest request = job_request({"colo", "sweep", "s.toml", "--only", "1"}, dir.path(), std::nullopt);
  ASSERT_TRUE(request.spec);
  MemoryEstimate chain = default_job_estimator({})->estimate(request);
  EstimateRequest direct;
  direct.spec = *big;
  MemoryEstimate analytical = AnalyticalEstimator().estimate(direct);
  ASSERT_TRUE(chain.known && analytical.known) << chain.reason << " / " << analytical.reason;
  EXPECT_EQ(chain.bytes, analytical.bytes + static_cast<int64_t>(std::ceil(static_cast<double>(analytical.bytes) *
                                                                         kSubmitMargin)))
      << "the analytical estimate plus the submit margin";
  MemoryEstimate small_estimate = default_job_estimator({})->estimate(
      job_request({"colo", "sweep", "s.toml", "--only", "0"}, dir.path(), std::nullopt));
  EXPECT_LT(small_estimate.bytes, chain.bytes) << "the wide configuration needs more";
  dir.write("bad.toml", "epochs = 1\n[sweep]\n");
  EXPECT_THROW(sweep_config_spec_of({"colo", "sweep", "bad.toml", "--only", "0"}, dir.path()), InputError);
}

}  // namespace
}  // namespace colo::estimate
