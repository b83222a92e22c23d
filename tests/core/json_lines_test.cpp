#include "colo/core/json_lines.h"

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "support/temp_dir.h"

namespace colo {
namespace {

TEST(JsonLines, WritesOneObjectPerLineAndReadsThemBack) {
  testing::TempDir dir;
  {
    JsonLinesWriter writer(dir.file("m.jsonl"), JsonLinesWriter::Mode::kTruncate);
    writer.write({{"epoch", 1}, {"loss", 0.5}});
    writer.write({{"epoch", 2}, {"loss", 0.25}});
  }
  auto records = read_json_lines(dir.file("m.jsonl"));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["epoch"], 2);
  EXPECT_DOUBLE_EQ(records[1]["loss"].get<double>(), 0.25);
}

TEST(JsonLines, AppendKeepsEarlierRecords) {
  testing::TempDir dir;
  { JsonLinesWriter(dir.file("m.jsonl"), JsonLinesWriter::Mode::kTruncate).write({{"a", 1}}); }
  { JsonLinesWriter(dir.file("m.jsonl"), JsonLinesWriter::Mode::kAppend).write({{"a", 2}}); }
  EXPECT_EQ(read_json_lines(dir.file("m.jsonl")).size(), 2u);
}

TEST(JsonLines, MalformedLineIsReportedWithItsNumber) {
  testing::TempDir dir;
  auto path = dir.write("m.jsonl", "{\"a\": 1}\n{broken\n");
  try {
    read_json_lines(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.jsonl:2"), std::string::npos) << e.what();
  }
}

TEST(JsonLines, KeepingRecordsThroughAStepDropsTheLaterOnesAndALineCutByACrash) {
  testing::TempDir dir;
  auto path = dir.write("steps.jsonl", "{\"step\": 1}\n{\"step\": 2}\n{\"step\": 3}\n{\"step\": 4, \"lo");
  keep_json_lines_through(path, "step", 2);
  auto records = read_json_lines(path);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["step"], 2);
  EXPECT_EQ(read_file(path).back(), '\n');
  auto broken = dir.write("broken.jsonl", "{\"step\": 1}\n{broken\n{\"step\": 3}\n");
  EXPECT_THROW(keep_json_lines_through(broken, "step", 2), InputError);
  keep_json_lines_through(dir.file("absent.jsonl"), "step", 2);
  EXPECT_FALSE(path_exists(dir.file("absent.jsonl")));
}

TEST(JsonLines, UnopenableFileThrows) {
  EXPECT_THROW(JsonLinesWriter("/nonexistent/dir/m.jsonl", JsonLinesWriter::Mode::kTruncate),
               std::runtime_error);
}

}  // namespace
}  // namespace colo
