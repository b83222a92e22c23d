#include "colo/core/subprocess.h"

#include <sys/wait.h>

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

}  // namespace
}  // namespace colo
