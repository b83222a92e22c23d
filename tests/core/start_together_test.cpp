#include "colo/core/start_together.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "colo/core/files.h"
#include "colo/core/progress_file.h"
#include "support/temp_dir.h"

namespace colo {
namespace {

// Another member of the group arriving after `delay_s`.
std::thread arrive_later(const std::string& directory, double delay_s) {
  return std::thread([directory, delay_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
    make_directories(directory);
    std::ofstream(directory + "/another-process");
  });
}

TEST(StartTogether, WaitsForTheWholeGroupOnceAndNotPastItsTimeout) {
  testing::TempDir dir;
  StartTogether two(dir.file("group"), 2, 30);
  std::thread other = arrive_later(dir.file("group"), 0.4);
  EXPECT_GE(two.wait(), 0.35);
  other.join();
  EXPECT_EQ(two.wait(), 0) << "a process joins its group once";
  EXPECT_EQ(list_directory(dir.file("group")).size(), 2u);

  StartTogether alone(dir.file("never-complete"), 3, 0.2);
  double waited = alone.wait();
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 5);
}

TEST(StartTogether, WithoutTheVariablesNothingWaits) {
  ::unsetenv(kStartTogetherVariable);
  StartTogether none;
  EXPECT_EQ(none.wait(), 0);
  testing::TempDir dir;
  ::setenv(kStartTogetherVariable, dir.file("group").c_str(), 1);
  ::setenv(kStartTogetherCountVariable, "zero", 1);
  StartTogether malformed;
  ::unsetenv(kStartTogetherVariable);
  ::unsetenv(kStartTogetherCountVariable);
  EXPECT_EQ(malformed.wait(), 0);
  EXPECT_FALSE(path_exists(dir.file("group")));
}

// colo train's progress: the first report waits for the group, is written
// after it, and the wait is not counted as training in later reports.
TEST(StartTogether, AProgressWritersFirstUpdateWaitsAndLeavesTheWaitOutOfTrainingTime) {
  testing::TempDir dir;
  std::string path = dir.file("job.progress");
  ::setenv(kProgressFileVariable, path.c_str(), 1);
  ::setenv(kStartTogetherVariable, dir.file("group").c_str(), 1);
  ::setenv(kStartTogetherCountVariable, "2", 1);
  ProgressWriter writer(/*interval_s=*/3600);
  for (const char* name : {kProgressFileVariable, kStartTogetherVariable, kStartTogetherCountVariable}) {
    ::unsetenv(name);
  }
  std::thread other = arrive_later(dir.file("group"), 0.5);
  writer.update({100, 0.25});
  other.join();
  auto first = read_progress_file(path);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->samples, 100);
  EXPECT_DOUBLE_EQ(first->train_s, 0.25);
  // The caller's clock ran through the wait: 0.25 s + the wait + 1 s of training.
  writer.update({500, 0.25 + 0.5 + 1.0});
  writer.flush();
  auto later = read_progress_file(path);
  ASSERT_TRUE(later);
  EXPECT_NEAR(later->train_s, 1.25, 0.1);
}

}  // namespace
}  // namespace colo
