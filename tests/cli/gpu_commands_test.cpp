// `colo gpus`, `colo monitor` and `colo mps run`, run as real processes.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/colo_process.h"
#include "colo/core/files.h"
#include "colo/core/subprocess.h"

namespace colo {
namespace {

using testing::run_colo;
using testing::TempDir;

TEST(ColoGpus, WithoutAGpuSaysSoAndSucceeds) {
  if (path_exists("/dev/nvidia0")) GTEST_SKIP() << "this machine has a GPU";
  TempDir dir;
  auto run = run_colo(dir, "gpus");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.out.find("no GPU on this machine"), std::string::npos) << run.out;
}

TEST(ColoGpus, ProfileIsMeasuredOnlyOnARealGpuAndSaysWhy) {
  if (path_exists("/dev/nvidia0")) GTEST_SKIP() << "this machine has a GPU";
  TempDir dir;
  auto none = run_colo(dir, "gpus --profile");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no GPU on this machine"), std::string::npos) << none.err;
  auto missing = run_colo(dir, "gpus --profile --gpu 5", "COLO_SIMULATED_GPUS=2");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("no GPU 5 (this machine has 2)"), std::string::npos) << missing.err;
  // A simulated GPU gets as far as colo.device_profile, which finds no CUDA GPU in torch.
  auto simulated = run_colo(dir, "gpus --profile", "COLO_SIMULATED_GPUS=1 COLO_PROFILE_DIR=" + dir.file("profiles"));
  EXPECT_EQ(simulated.status, 2) << simulated.out << simulated.err;
  EXPECT_NE(simulated.err.find("no CUDA GPU here"), std::string::npos) << simulated.err;
  EXPECT_FALSE(path_exists(dir.file("profiles")));
  auto alone = run_colo(dir, "gpus --gpu 1", "COLO_SIMULATED_GPUS=2");  // --gpu chooses a GPU to profile only
  EXPECT_NE(alone.status, 0);
  EXPECT_NE(alone.err.find("--profile"), std::string::npos) << alone.err;
}

TEST(ColoGpus, ListsSimulatedGpusAsJson) {
  TempDir dir;
  auto run = run_colo(dir, "gpus --json", "COLO_SIMULATED_GPUS=3");
  ASSERT_EQ(run.status, 0) << run.err;
  auto gpus = nlohmann::json::parse(run.out);
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[2]["index"], 2);
  EXPECT_EQ(gpus[0]["mem_total_bytes"], int64_t{80} << 30);
  EXPECT_DOUBLE_EQ(gpus[0]["power_w"].get<double>(), 71.0);  // idle, as measured on an H100 (SimulatedGpuSpec)
}

TEST(ColoGpus, KeepsToTheGpusCudaVisibleDevicesNames) {
  TempDir dir;
  auto run = run_colo(dir, "gpus --json", "COLO_SIMULATED_GPUS=4 CUDA_VISIBLE_DEVICES=GPU-SIM-3,1");
  ASSERT_EQ(run.status, 0) << run.err;
  auto gpus = nlohmann::json::parse(run.out);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]["index"], 3);
  EXPECT_EQ(gpus[1]["index"], 1);

  auto wrong = run_colo(dir, "gpus --json", "COLO_SIMULATED_GPUS=2 CUDA_VISIBLE_DEVICES=5");
  EXPECT_NE(wrong.status, 0);
  EXPECT_NE(wrong.err.find("CUDA_VISIBLE_DEVICES: '5' names no GPU"), std::string::npos) << wrong.err;

  // A host where no GPU is seen at all (Slurm's stand-in devices on a test
  // node set CUDA_VISIBLE_DEVICES=0): no GPU, as without the variable.
  auto none = run_colo(dir, "gpus --json", "COLO_SIMULATED_GPUS=0 CUDA_VISIBLE_DEVICES=0");
  EXPECT_EQ(none.status, 0) << none.err;
  EXPECT_EQ(nlohmann::json::parse(none.out).size(), 0u) << none.out;
}

TEST(ColoMonitor, SamplesWhileTheCommandRunsAndPassesOnItsExitStatus) {
  TempDir dir;
  auto run = run_colo(dir, "monitor --interval 0.1 --out " + dir.file("s.csv") + " --summary-json " +
                               dir.file("sum.json") + " -- sh -c 'sleep 1; exit 3'",
                      "COLO_SIMULATED_GPUS=2");
  EXPECT_EQ(run.status, 3) << run.err;
  auto summary = nlohmann::json::parse(read_file(dir.file("sum.json")));
  EXPECT_EQ(summary["exit_code"], 3);
  EXPECT_GE(summary["wall_s"].get<double>(), 1.0);
  ASSERT_EQ(summary["devices"].size(), 2u);
  int samples = summary["devices"][0]["samples"].get<int>();
  EXPECT_GE(samples, 8);
  EXPECT_LE(samples, 13);
  std::ifstream csv(dir.file("s.csv"));
  int lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  EXPECT_EQ(lines, 1 + 2 * samples);
  EXPECT_NE(run.out.find("energy_j"), std::string::npos) << "prints a summary table";
}

TEST(ColoMonitor, SimulatedGpusFollowTheWallClock) {
  TempDir dir;
  auto run = run_colo(dir, "monitor --interval 0.1 --duration 1 --out " + dir.file("s.csv") + " --summary-json " +
                               dir.file("sum.json"),
                      "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(run.status, 0) << run.err;
  auto device = nlohmann::json::parse(read_file(dir.file("sum.json")))["devices"][0];
  const double duration_s = device["duration_s"].get<double>();
  EXPECT_GE(duration_s, 0.7) << "the samples span the second sampled";
  EXPECT_NEAR(device["energy_j"].get<double>(), 71 * duration_s, 1e-6) << "idle power x time";
  std::ifstream csv(dir.file("s.csv"));
  std::string line;
  std::getline(csv, line);
  ASSERT_EQ(line.rfind("unix_s,time_s,", 0), 0u) << line;
  double last_unix_s = -1, last_time_s = -1, last_energy_j = -1;
  int rows = 0;
  while (std::getline(csv, line)) {
    std::istringstream row(line);
    std::vector<std::string> cells;
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    ASSERT_GE(cells.size(), 11u) << line;
    const double unix_s = std::stod(cells[0]), time_s = std::stod(cells[1]), energy_j = std::stod(cells[10]);
    EXPECT_GT(unix_s, last_unix_s) << line;
    EXPECT_GT(time_s, last_time_s) << line;
    EXPECT_GT(energy_j, last_energy_j) << line;
    last_unix_s = unix_s, last_time_s = time_s, last_energy_j = energy_j;
    ++rows;
  }
  EXPECT_GE(rows, 5);
  EXPECT_GT(last_energy_j, 0);
}

TEST(ColoMonitor, AMalformedLoaderAddressIsRejectedBeforeAnythingIsWritten) {
  TempDir dir;
  auto run = run_colo(dir, "monitor --duration 0.2 --loader not-an-address --out " + dir.file("s.csv"),
                      "COLO_SIMULATED_GPUS=1");
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("'not-an-address'"), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("s.csv")));
}

TEST(ColoMonitor, NeedsACommandOrADuration) {
  TempDir dir;
  auto run = run_colo(dir, "monitor");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("expected a command"), std::string::npos) << run.err;
}

std::string fake_control() { return std::string(COLO_SOURCE_DIR) + "/tests/gpu/fake_mps_control.sh"; }

int daemon_pid(const TempDir& dir) {
  std::ifstream in(dir.file("mps/pipe/nvidia-cuda-mps-control.pid"));
  int pid = 0;
  in >> pid;
  return pid;
}

TEST(ColoMpsRun, RunsEveryClientAndQuitsTheDaemon) {
  TempDir dir;
  auto run = run_colo(dir, "mps run --count 2 --percentage 50 --control " + fake_control() + " --dir " +
                               dir.file("mps") + " --summary-json " + dir.file("sum.json") +
                               " -- sh -c 'test \"$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\" = 50 && "
                               "echo $COLO_MPS_CLIENT_INDEX >> " + dir.file("ran") + "'");
  ASSERT_EQ(run.status, 0) << run.err;
  auto summary = nlohmann::json::parse(read_file(dir.file("sum.json")));
  EXPECT_EQ(summary["exit_codes"], nlohmann::json({0, 0}));
  EXPECT_TRUE(summary["daemon_gone"].get<bool>());
  std::string ran = read_file(dir.file("ran"));
  EXPECT_NE(ran.find('0'), std::string::npos);
  EXPECT_NE(ran.find('1'), std::string::npos);
}

// Interrupts `colo mps run ... -- sleep 30` once the daemon's pid file
// appears plus `after_ms`; expects colo to die by SIGINT with the daemon gone.
void expect_interrupt_quits_the_daemon(int after_ms, const EnvironmentOverrides& env) {
  TempDir dir;
  ChildProcess colo({COLO_EXECUTABLE, "mps", "run", "--count", "2", "--control", fake_control(), "--dir",
                     dir.file("mps"), "--", "sleep", "30"},
                    env, dir.file("colo.log"));
  int pid = 0;
  for (int i = 0; i < 400 && pid == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    pid = daemon_pid(dir);
  }
  ASSERT_GT(pid, 0) << read_file(dir.file("colo.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
  ::kill(colo.pid(), SIGINT);
  int status = colo.wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << read_file(dir.file("colo.log"));
  EXPECT_FALSE(process_alive(pid)) << "the MPS daemon outlived colo";
}

TEST(ColoMpsRun, QuitsTheDaemonWhenInterrupted) { expect_interrupt_quits_the_daemon(300, {}); }

// The daemon's pid file exists before `nvidia-cuda-mps-control -d` returns;
// an interrupt in between (seen once in CI, on a loaded machine) must still
// quit it.
TEST(ColoMpsRun, QuitsTheDaemonWhenInterruptedWhileItStarts) {
  expect_interrupt_quits_the_daemon(0, {{"FAKE_MPS_START_DELAY_S", "1"}});
}

}  // namespace
}  // namespace colo
