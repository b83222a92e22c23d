#include <gtest/gtest.h>

#include "colo/fuse/cuda/optimizer_kernels.h"

namespace colo::fuse::cuda {
namespace {

OptimizerTensor tensor_of(int64_t numel) {
  OptimizerTensor t;
  t.numel = numel;
  t.per_model = numel;
  return t;
}

// Every non-empty tensor lands in exactly one launch, in order; a launch
// holds at most kOptimizerTensorsPerLaunch; each tensor's blocks follow the
// previous tensor's and cover it.
TEST(OptimizerPlan, PacksTensorsInOrderAndNumbersTheirBlocks) {
  std::vector<OptimizerTensor> tensors;
  for (int k = 0; k < 30; ++k) tensors.push_back(tensor_of(k == 5 ? 0 : k * 1000 + 1));
  std::vector<OptimizerLaunch> launches = plan_optimizer_launches(tensors);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].count, kOptimizerTensorsPerLaunch);
  EXPECT_EQ(launches[1].count, 29 - kOptimizerTensorsPerLaunch) << "the empty tensor is left out";
  size_t next = 0;
  for (const OptimizerLaunch& launch : launches) {
    int64_t blocks = 0;
    for (int k = 0; k < launch.count; ++k) {
      if (tensors[next].numel == 0) ++next;
      const OptimizerTensor& t = launch.tensors[k];
      EXPECT_EQ(t.numel, tensors[next++].numel);
      EXPECT_EQ(t.first_block, blocks);
      blocks += (t.numel + kOptimizerBlockElements - 1) / kOptimizerBlockElements;
    }
    EXPECT_EQ(launch.blocks, blocks);
  }
  EXPECT_EQ(next, tensors.size());
}

TEST(OptimizerPlan, ATensorLargerThanABlockGetsSeveralAndNothingGetsNone) {
  std::vector<OptimizerLaunch> launches =
      plan_optimizer_launches({tensor_of(kOptimizerBlockElements * 3 + 1), tensor_of(1)});
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].tensors[1].first_block, 4);
  EXPECT_EQ(launches[0].blocks, 5);
  EXPECT_TRUE(plan_optimizer_launches({tensor_of(0)}).empty());
}

}  // namespace
}  // namespace colo::fuse::cuda
