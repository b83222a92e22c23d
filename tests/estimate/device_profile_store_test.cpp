#include "colo/estimate/device_profile_store.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include <string>

#include "support/temp_dir.h"

namespace colo::estimate {
namespace {

// Points COLO_PROFILE_DIR at a fresh directory for one test.
class ProfileDirectory {
 public:
  ProfileDirectory() { ::setenv("COLO_PROFILE_DIR", dir_.path().c_str(), 1); }
  ~ProfileDirectory() { ::unsetenv("COLO_PROFILE_DIR"); }
  const testing::TempDir& dir() const { return dir_; }

 private:
  testing::TempDir dir_;
};

TEST(ProfileKey, NamesAGpuModelByItsShortName) {
  EXPECT_EQ(profile_key("NVIDIA H100 80GB HBM3"), "h100");
  EXPECT_EQ(profile_key("NVIDIA H200"), "h200");
  EXPECT_EQ(profile_key("NVIDIA A100-SXM4-80GB"), "a100");
  EXPECT_EQ(profile_key("NVIDIA GeForce RTX 4090"), "rtx4090");
  EXPECT_EQ(profile_key("Tesla V100-PCIE-32GB"), "v100");
  EXPECT_EQ(profile_key("NVIDIA L40S"), "l40s");
  EXPECT_THROW(profile_key("NVIDIA"), std::invalid_argument);
}

TEST(DeviceProfileStore, AStoredProfileLoadsAsItWasMeasured) {
  ProfileDirectory profiles;
  DeviceProfile measured = default_device_profile();
  measured.name = "NVIDIA H200, PyTorch 2.11, CUDA 13";
  measured.context_bytes += int64_t{96} << 20;
  measured.cublas_workspace_bytes = int64_t{16} << 20;
  measured.conv_workspace.add("c5o7k3x3s1p1g1h9w9", ConvPass::kForward, 32, 12345);
  measured.conv_workspace_half.add("c5o7k3x3s1p1g1h9w9", ConvPass::kWeightGrad, 32, 777);
  EXPECT_FALSE(device_profile_stored("h200"));
  std::string path = store_device_profile(measured, "h200");
  EXPECT_EQ(path, profiles.dir().file("h200.json"));
  ASSERT_TRUE(device_profile_stored("h200"));
  DeviceProfile loaded = load_device_profile("h200");
  EXPECT_EQ(loaded.name, measured.name);
  EXPECT_EQ(loaded.context_bytes, measured.context_bytes);
  EXPECT_EQ(loaded.library_workspace_bytes, measured.library_workspace_bytes);
  EXPECT_EQ(loaded.gemm_workspace_bytes(), int64_t{16} << 20);
  EXPECT_EQ(loaded.fragmentation, measured.fragmentation);
  EXPECT_EQ(loaded.conv_workspace.to_json(), measured.conv_workspace.to_json());
  EXPECT_EQ(loaded.conv_workspace_half.to_json(), measured.conv_workspace_half.to_json());
  const DeviceProfile reference = default_device_profile();
  const ConvGeometry stem = ConvGeometry::from_key("c3o24k3x3s2p1g1h224w224");  // ShuffleNetV2's
  EXPECT_EQ(reference.conv_workspace_half.workspace_bytes(stem, ConvPass::kWeightGrad, 256), 361448464)
      << "the built-in profile's bf16 table (an H200's): a 3-channel stem's weight gradient asks for 345 MiB";
  EXPECT_EQ(reference.conv_workspace.workspace_bytes(stem, ConvPass::kWeightGrad, 256), 0) << "float32's takes none";
  EXPECT_EQ(loaded.conv_workspace.workspace_bytes(ConvGeometry::from_key("c5o7k3x3s1p1g1h9w9"),
                                                  ConvPass::kForward, 32),
            12345);
}

TEST(DeviceProfileStore, AProfileWithoutAMeasuredCublasWorkspaceTakesHalfItsLibraryWorkspace) {
  ProfileDirectory profiles;
  // Measured on an H200 before profiles held cuBLAS's workspace: two 32 MiB
  // workspaces and one 2 MiB small-pool segment.
  profiles.dir().write("h200.json", "{\"name\": \"H200\", \"context_bytes\": 794820608, "
                                    "\"library_workspace_bytes\": 69206016, \"conv_workspace\": {\"shapes\": {}}}");
  EXPECT_EQ(load_device_profile("h200").gemm_workspace_bytes(), int64_t{33} << 20);
  profiles.dir().write("h200.json", "{\"name\": \"H200\", \"context_bytes\": 794820608, "
                                    "\"library_workspace_bytes\": 69206016, \"cublas_workspace_bytes\": 33554432, "
                                    "\"conv_workspace\": {\"shapes\": {}}}");
  EXPECT_EQ(load_device_profile("h200").gemm_workspace_bytes(), int64_t{32} << 20);
  profiles.dir().write("h200.json", "{\"name\": \"H200\", \"context_bytes\": 1, \"library_workspace_bytes\": 1, "
                                    "\"cublas_workspace_bytes\": \"32 MiB\", \"conv_workspace\": {\"shapes\": {}}}");
  EXPECT_THROW(load_device_profile("h200"), std::runtime_error);
}

TEST(DeviceProfileStore, TheReferenceGpuNeedsNoStoredProfileAndOthersNameTheCommandThatMakesOne) {
  ProfileDirectory profiles;
  EXPECT_EQ(load_device_profile(kReferenceProfileKey).context_bytes, default_device_profile().context_bytes);
  try {
    load_device_profile("h200");
    FAIL() << "no profile is stored";
  } catch (const ProfileNotFound& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("colo gpus --profile"), std::string::npos) << what;
    EXPECT_NE(what.find(profiles.dir().path()), std::string::npos) << what;
  }
  EXPECT_THROW(load_device_profile("H200!"), std::invalid_argument);
  EXPECT_THROW(load_device_profile("../h100"), std::invalid_argument);
}

TEST(DeviceProfileStore, AMalformedProfileIsRefusedNamingItsFileAndField) {
  ProfileDirectory profiles;
  profiles.dir().write("a100.json", "{\"name\": \"A100\", \"context_bytes\": 1}");
  try {
    load_device_profile("a100");
    FAIL() << "library_workspace_bytes and conv_workspace are missing";
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("a100.json"), std::string::npos) << what;
    EXPECT_NE(what.find("library_workspace_bytes"), std::string::npos) << what;
  }
  profiles.dir().write("l4.json", "not json");
  EXPECT_THROW(load_device_profile("l4"), std::runtime_error);
}

TEST(DeviceProfileStore, TheDirectoryFollowsTheEnvironment) {
  ::unsetenv("COLO_PROFILE_DIR");
  const char* xdg = std::getenv("XDG_DATA_HOME");
  std::string saved = xdg ? xdg : "";
  ::setenv("XDG_DATA_HOME", "/data/home", 1);
  EXPECT_EQ(profile_directory(), "/data/home/colo/profiles");
  ::setenv("COLO_PROFILE_DIR", "/elsewhere", 1);
  EXPECT_EQ(profile_directory(), "/elsewhere");
  ::unsetenv("COLO_PROFILE_DIR");
  if (xdg) {
    ::setenv("XDG_DATA_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_DATA_HOME");
  }
}

}  // namespace
}  // namespace colo::estimate
