#include "colo/core/json_lines.h"

#include <gtest/gtest.h>

#include "colo/core/error.h"
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

TEST(JsonLines, UnopenableFileThrows) {
  EXPECT_THROW(JsonLinesWriter("/nonexistent/dir/m.jsonl", JsonLinesWriter::Mode::kTruncate),
               std::runtime_error);
}

}  // namespace
}  // namespace colo
