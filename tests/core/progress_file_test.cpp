#include "colo/core/progress_file.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "colo/core/paths.h"
#include "support/temp_dir.h"

namespace colo {
namespace {

TEST(ProgressFile, WriterWritesWhatTheReaderReadsAndOnlyWhenAsked) {
  testing::TempDir dir;
  std::string path = dir.file("job.progress");
  ::setenv(kProgressFileVariable, path.c_str(), 1);
  ProgressWriter writer(/*interval_s=*/3600);
  ::unsetenv(kProgressFileVariable);
  ASSERT_TRUE(writer.enabled());
  writer.update({100, 0.5});  // the first update writes at once
  auto first = read_progress_file(path);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->samples, 100);
  EXPECT_DOUBLE_EQ(first->train_s, 0.5);
  writer.update({300, 1.5});  // within the interval: not yet
  EXPECT_EQ(read_progress_file(path)->samples, 100);
  writer.flush();
  EXPECT_EQ(read_progress_file(path)->samples, 300);
  EXPECT_DOUBLE_EQ(read_progress_file(path)->train_s, 1.5);
}

TEST(ProgressFile, ADataWaitIsReadWhereTheJobReportsIt) {
  testing::TempDir dir;
  std::string path = dir.write("with.progress", "{\"samples\": 10, \"train_s\": 2.0, \"data_wait_s\": 0.5}");
  auto with = read_progress_file(path);
  ASSERT_TRUE(with && with->data_wait_s);
  EXPECT_DOUBLE_EQ(*with->data_wait_s, 0.5);
  auto without = read_progress_file(dir.write("without.progress", "{\"samples\": 10, \"train_s\": 2.0}"));
  ASSERT_TRUE(without);
  EXPECT_FALSE(without->data_wait_s);
  auto negative = read_progress_file(dir.write("neg.progress", "{\"samples\": 10, \"train_s\": 2.0, \"data_wait_s\": -1}"));
  ASSERT_TRUE(negative);
  EXPECT_FALSE(negative->data_wait_s) << "a negative wait is not a wait";
}

TEST(ProgressFile, WithoutTheVariableNothingIsWritten) {
  ::unsetenv(kProgressFileVariable);
  ProgressWriter writer;
  EXPECT_FALSE(writer.enabled());
  writer.update({1, 1});
  writer.flush();  // no file to write, no error
}

TEST(ProgressFile, MissingMalformedOrNegativeFilesReadAsNothing) {
  testing::TempDir dir;
  EXPECT_FALSE(read_progress_file(dir.file("missing")));
  EXPECT_FALSE(read_progress_file(dir.write("partial", "{\"samples\": 10")));
  EXPECT_FALSE(read_progress_file(dir.write("wrong", "{\"samples\": \"many\", \"train_s\": 1}")));
  EXPECT_FALSE(read_progress_file(dir.write("negative", "{\"samples\": -5, \"train_s\": 1}")));
}

}  // namespace
}  // namespace colo
