#include "colo/gpu/mps.h"

#include <fstream>

#include <gtest/gtest.h>

#include "colo/core/files.h"
#include "support/temp_dir.h"

namespace colo::gpu {
namespace {

MpsOptions fake_options(const testing::TempDir& dir) {
  MpsOptions options;
  options.control = COLO_FAKE_MPS_CONTROL;
  options.pipe_dir = dir.file("pipe");
  options.log_dir = dir.file("log");
  options.timeout_s = 5;
  return options;
}

TEST(Mps, StartsAHealthyDaemonAndQuitsItOnDestruction) {
  testing::TempDir dir;
  int pid = 0;
  {
    MpsDaemon daemon(fake_options(dir));
    EXPECT_TRUE(daemon.started_here());
    EXPECT_TRUE(daemon.healthy());
    ASSERT_TRUE(daemon.control_pid().has_value());
    pid = *daemon.control_pid();
    EXPECT_TRUE(process_alive(pid));
  }
  EXPECT_FALSE(process_alive(pid)) << "the daemon must be gone";
  EXPECT_FALSE(path_exists(dir.file("pipe/nvidia-cuda-mps-control.pid")));
}

TEST(Mps, LeavesADaemonItDidNotStartRunning) {
  testing::TempDir dir;
  MpsDaemon owner(fake_options(dir));
  int pid = *owner.control_pid();
  {
    MpsDaemon guest(fake_options(dir));
    EXPECT_FALSE(guest.started_here());
    EXPECT_EQ(*guest.control_pid(), pid);
  }
  EXPECT_TRUE(process_alive(pid)) << "the guest must not quit the owner's daemon";
}

TEST(Mps, ClientEnvironmentCarriesPipePercentageAndMemoryLimit) {
  testing::TempDir dir;
  MpsDaemon daemon(fake_options(dir));
  auto env = daemon.client_environment(50, int64_t{4} << 30, {0});
  EXPECT_EQ(env["CUDA_MPS_PIPE_DIRECTORY"], dir.file("pipe"));
  EXPECT_EQ(env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "50");
  EXPECT_EQ(env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=4096M");
  EXPECT_EQ(daemon.client_environment(std::nullopt, int64_t{1} << 30, {0, 1})["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"],
            "0=1024M,1=1024M")
      << "a multi-GPU job gets the limit on each of its devices";
  EXPECT_EQ(daemon.client_environment(std::nullopt, std::nullopt).count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
}

TEST(Mps, ListsServersAndTheirClients) {
  testing::TempDir dir;
  MpsDaemon daemon(fake_options(dir));
  std::ofstream(dir.file("pipe/servers")) << "4242\n";
  std::ofstream(dir.file("pipe/clients_4242")) << "5001\n5002\n";
  EXPECT_EQ(daemon.server_pids(), std::vector<int>{4242});
  EXPECT_EQ(daemon.client_pids(4242), (std::vector<int>{5001, 5002}));
}

TEST(Mps, RefusesTheSystemPipeDirectory) {
  testing::TempDir dir;
  MpsOptions options = fake_options(dir);
  options.pipe_dir = "/tmp/nvidia-mps";
  EXPECT_THROW(MpsDaemon{options}, MpsError);
}

TEST(Mps, MissingControlProgramIsAClearError) {
  testing::TempDir dir;
  MpsOptions options = fake_options(dir);
  options.control = dir.file("no-such-control");
  try {
    MpsDaemon daemon(options);
    FAIL() << "no error";
  } catch (const MpsError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot start"), std::string::npos) << e.what();
  }
}

TEST(Mps, ParsesPidLists) {
  EXPECT_EQ(parse_pid_list("12 34\n56\nno clients\n"), (std::vector<int>{12, 34, 56}));
  EXPECT_TRUE(parse_pid_list("").empty());
}

}  // namespace
}  // namespace colo::gpu
