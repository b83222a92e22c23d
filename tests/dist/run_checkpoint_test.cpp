#include "colo/dist/run_checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::dist {
namespace {

TEST(RunCheckpoint, AWorkersFileReadsBackItsValuesAndTensorsOfEveryType) {
  testing::TempDir dir;
  WorkerCheckpoint saved;
  saved.values = {{"step", 7}, {"loss", 0.25}};
  saved.tensors = {at::randn({3, 4}), at::arange(5, at::kLong), at::randn({2}, at::kDouble),
                   at::arange(6, at::kInt), at::arange(9, at::kByte).view({3, 3})};
  write_worker_checkpoint(dir.path(), 1, 7, saved);
  WorkerCheckpoint read = read_worker_checkpoint(dir.path(), 1, 7);
  EXPECT_EQ(read.values, saved.values);
  ASSERT_EQ(read.tensors.size(), saved.tensors.size());
  for (size_t i = 0; i < saved.tensors.size(); ++i) EXPECT_TRUE(read.tensors[i].equal(saved.tensors[i])) << i;
  EXPECT_THROW(write_worker_checkpoint(dir.path(), 0, 1, {{}, {at::zeros({2}, at::kHalf)}}), std::invalid_argument);
}

TEST(RunCheckpoint, OnlyACommittedStepIsTheRunsAndOtherStepsAreRemoved) {
  testing::TempDir dir;
  EXPECT_NE(testing::input_error_of([&] { committed_checkpoint(dir.path()); }).find("none was committed"),
            std::string::npos);
  WorkerCheckpoint c{{{"x", 1}}, {at::ones({2})}};
  for (int64_t step : {10, 20, 30}) write_worker_checkpoint(dir.path(), 0, step, c);
  write_worker_checkpoint(dir.path(), 1, 20, c);
  commit_checkpoint(dir.path(), 20, {{"workers", 2}});
  EXPECT_EQ(committed_checkpoint(dir.path())["step"], 20);
  remove_other_checkpoints(dir.path(), 0, 20);
  EXPECT_EQ(list_directory(checkpoint_directory(dir.path())),
            (std::vector<std::string>{"latest.json", "rank0-step20.ckpt", "rank1-step20.ckpt"}));
}

TEST(RunCheckpoint, ATruncatedOrForeignFileIsAnInputErrorNamingIt) {
  testing::TempDir dir;
  write_worker_checkpoint(dir.path(), 0, 5, {{{"x", 1}}, {at::ones({1000})}});
  std::string path = worker_checkpoint_file(dir.path(), 0, 5);
  std::string bytes = read_file(path);
  write_file_atomically(path, bytes.substr(0, bytes.size() - 100));
  std::string truncated = testing::input_error_of([&] { read_worker_checkpoint(dir.path(), 0, 5); });
  EXPECT_NE(truncated.find(path), std::string::npos) << truncated;
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  write_file_atomically(path, "not a checkpoint\n");
  EXPECT_NE(testing::input_error_of([&] { read_worker_checkpoint(dir.path(), 0, 5); }).find("malformed header"),
            std::string::npos);
  write_file_atomically(checkpoint_directory(dir.path()) + "/latest.json", "{\"step\": \"ten\"}");
  EXPECT_NE(testing::input_error_of([&] { committed_checkpoint(dir.path()); }).find("latest.json"), std::string::npos);
}

}  // namespace
}  // namespace colo::dist
