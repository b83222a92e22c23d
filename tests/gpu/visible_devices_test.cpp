// CUDA_VISIBLE_DEVICES read as CUDA reads it, against the GPUs NVML lists.

#include "colo/gpu/visible_devices.h"

#include <gtest/gtest.h>

namespace colo::gpu {
namespace {

std::vector<DeviceInfo> four_gpus() {
  std::vector<DeviceInfo> gpus;
  for (int i = 0; i < 4; ++i) {
    DeviceInfo d;
    d.index = i;
    d.uuid = "GPU-" + std::string(1, char('a' + i)) + "1b2c3d-" + std::to_string(i);
    gpus.push_back(d);
  }
  return gpus;
}

TEST(VisiblePositions, UnsetGivesEveryGpuAndEmptyGivesNone) {
  EXPECT_EQ(visible_positions(four_gpus(), std::nullopt), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(visible_positions(four_gpus(), "").empty());
  EXPECT_TRUE(visible_positions(four_gpus(), " ").empty());
}

TEST(VisiblePositions, IndicesAndUuidPrefixesKeepTheirOrder) {
  EXPECT_EQ(visible_positions(four_gpus(), "2"), (std::vector<size_t>{2}));
  EXPECT_EQ(visible_positions(four_gpus(), "3, 0"), (std::vector<size_t>{3, 0}));
  EXPECT_EQ(visible_positions(four_gpus(), "GPU-c1b2c3d-2,GPU-a"), (std::vector<size_t>{2, 0}));
}

TEST(VisiblePositions, AnIndexIsMatchedByValueNotByText) {
  EXPECT_EQ(visible_positions(four_gpus(), "01"), (std::vector<size_t>{1}));
}

TEST(VisiblePositions, AnIndexOfAGpuNotThereIsAnErrorNamingIt) {
  try {
    visible_positions(four_gpus(), "1,7");
    FAIL() << "7 is not a GPU here";
  } catch (const VisibleDevicesError& e) {
    EXPECT_NE(std::string(e.what()).find("'7' names no GPU"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 GPU-d1b2c3d-3"), std::string::npos) << "lists the GPUs there are";
  }
}

TEST(VisiblePositions, AmbiguousPrefixDuplicateEmptyEntryAndMigAreErrors) {
  EXPECT_THROW(visible_positions(four_gpus(), "GPU-"), VisibleDevicesError);  // every UUID starts so
  EXPECT_THROW(visible_positions(four_gpus(), "1,GPU-b1b2c3d-1"), VisibleDevicesError);  // GPU 1 twice
  EXPECT_THROW(visible_positions(four_gpus(), "0,,1"), VisibleDevicesError);
  EXPECT_THROW(visible_positions(four_gpus(), "MIG-4b2c"), VisibleDevicesError);
  EXPECT_THROW(visible_positions(four_gpus(), "GPU-zz"), VisibleDevicesError);
}

}  // namespace
}  // namespace colo::gpu
