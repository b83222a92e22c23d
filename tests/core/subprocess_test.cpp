#include "colo/core/subprocess.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "colo/core/stopwatch.h"

namespace colo {
namespace {

TEST(RunProcess, CapturesOutputExitCodeAndStdin) {
  auto result = run_process({"sh", "-c", "read x; echo got $x; exit 4"}, {}, "hello\n", 5);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.output, "got hello\n");
}

TEST(RunProcess, EnvironmentOverridesAreSeen) {
  auto result = run_process({"sh", "-c", "echo $COLO_TEST_VALUE"}, {{"COLO_TEST_VALUE", "42"}}, "", 5);
  EXPECT_EQ(result.output, "42\n");
}

TEST(RunProcess, KillsAProgramThatOutlivesItsTimeout) {
  Stopwatch clock;
  auto result = run_process({"sleep", "10"}, {}, "", 0.3);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.signal, SIGKILL);
  EXPECT_LT(clock.elapsed_s(), 3.0);
}

TEST(RunProcess, MissingProgramExits127) {
  EXPECT_EQ(run_process({"/nonexistent/program"}, {}, "", 5).exit_code, 127);
}

TEST(ChildProcess, TerminateEndsTheWholeProcessGroup) {
  ChildProcess child({"sh", "-c", "sleep 30 & sleep 30"}, {});
  Stopwatch clock;
  child.terminate(2.0);
  EXPECT_TRUE(child.poll().has_value());
  EXPECT_EQ(exit_code_of(*child.poll()), 128 + SIGTERM);
  EXPECT_LT(clock.elapsed_s(), 3.0);
}

TEST(ProcessAlive, ReportsLiveAndEndedProcesses) {
  ChildProcess child({"true"}, {});
  pid_t pid = child.pid();
  child.wait();
  EXPECT_FALSE(process_alive(pid));
  EXPECT_TRUE(process_alive(::getpid()));
}

TEST(BelongsToJob, CountsAWorkerThatLeftTheJobsProcessGroup) {
  // The background sleep starts a session of its own, as torchrun's workers do.
  std::string pid_file = ::testing::TempDir() + "/colo_setsid_pid";
  ChildProcess child({"sh", "-c", "setsid sleep 30 & echo $! > " + pid_file + "; wait"}, {});
  uint32_t worker = 0;
  for (int i = 0; i < 100 && worker == 0; ++i) {
    std::ifstream in(pid_file);
    in >> worker;
    if (worker == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(worker, 0u);
  for (int i = 0; i < 100 && process_group_of(worker) != static_cast<int>(worker); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // until setsid has run
  }
  uint32_t leader = static_cast<uint32_t>(child.pid());
  EXPECT_NE(process_group_of(worker), static_cast<int>(leader));
  EXPECT_TRUE(belongs_to_job(worker, leader));
  EXPECT_TRUE(belongs_to_job(leader, leader));
  EXPECT_FALSE(belongs_to_job(static_cast<uint32_t>(::getpid()), leader));
  ::kill(static_cast<pid_t>(worker), SIGKILL);
  child.terminate(2.0);
  std::remove(pid_file.c_str());
}

}  // namespace
}  // namespace colo
