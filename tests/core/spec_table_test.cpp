#include "colo/core/spec_table.h"

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo {
namespace {


TEST(SpecTable, ReadsTypedFieldsAndDefaults) {
  testing::TempDir dir;
  auto path = dir.write("a.toml", "n = 3\nx = 0.5\nname = \"sgd\"\nflag = true\nws = [1, 2]\n[sub]\nk = 7\n");
  SpecTable root = SpecTable::root(path);
  EXPECT_EQ(root.integer_or("n", 0, 0), 3);
  EXPECT_DOUBLE_EQ(root.number_or("x", 0, 0, 1), 0.5);
  EXPECT_EQ(root.choice_or("name", "adam", {"sgd", "adam"}), "sgd");
  EXPECT_TRUE(root.boolean_or("flag", false));
  EXPECT_EQ(root.integers_or("ws", {}, 1), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(root.integer_or("absent", 42, 0), 42);
  auto sub = root.table("sub");
  ASSERT_TRUE(sub.has_value());
  EXPECT_EQ(sub->integer_or("k", 0, 0), 7);
  EXPECT_EQ(sub->field("k"), "sub.k");
  EXPECT_NO_THROW(root.reject_unknown());
}

TEST(SpecTable, IntegerWhereNumberExpectedIsAccepted) {
  testing::TempDir dir;
  SpecTable root = SpecTable::root(dir.write("a.toml", "lr = 1\n"));
  EXPECT_DOUBLE_EQ(root.number_or("lr", 0, 0, 10), 1.0);
}

TEST(SpecTable, WrongTypeNamesFileFieldAndExpectation) {
  testing::TempDir dir;
  auto path = dir.write("a.toml", "[train]\nbatch_size = \"big\"\n");
  SpecTable root = SpecTable::root(path);
  auto train = root.table("train");
  std::string message = testing::input_error_of([&] { train->integer_or("batch_size", 1, 1); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("train.batch_size"), std::string::npos) << message;
  EXPECT_NE(message.find("expected an integer >= 1"), std::string::npos) << message;
  EXPECT_NE(message.find("\"big\""), std::string::npos) << message;
}

TEST(SpecTable, OutOfRangeIsRejected) {
  testing::TempDir dir;
  SpecTable root = SpecTable::root(dir.write("a.toml", "batch_size = 0\n"));
  EXPECT_NE(testing::input_error_of([&] { root.integer_or("batch_size", 1, 1); }).find("got 0"), std::string::npos);
}

TEST(SpecTable, UnknownFieldIsRejectedByName) {
  testing::TempDir dir;
  SpecTable root = SpecTable::root(dir.write("a.toml", "epochs = 1\nepohcs = 2\n"));
  root.integer_or("epochs", 1, 1);
  std::string message = testing::input_error_of([&] { root.reject_unknown(); });
  EXPECT_NE(message.find("epohcs: unknown field"), std::string::npos) << message;
}

TEST(SpecTable, UnknownChoiceListsTheChoices) {
  testing::TempDir dir;
  SpecTable root = SpecTable::root(dir.write("a.toml", "name = \"sgdd\"\n"));
  std::string message = testing::input_error_of([&] { root.choice_or("name", "sgd", {"sgd", "adam"}); });
  EXPECT_NE(message.find("expected one of sgd, adam, got \"sgdd\""), std::string::npos) << message;
}

TEST(SpecTable, MalformedTomlGivesLineNumber) {
  testing::TempDir dir;
  auto path = dir.write("bad.toml", "a = 1\nb = [1, 2\n");
  std::string message = testing::input_error_of([&] { SpecTable::root(path); });
  EXPECT_NE(message.find("bad.toml"), std::string::npos) << message;
  EXPECT_NE(message.find("line 2"), std::string::npos) << message;
  EXPECT_NE(message.find("malformed TOML"), std::string::npos) << message;
}

TEST(SpecTable, MissingFileIsReported) {
  std::string message = testing::input_error_of([] { SpecTable::root("/nonexistent/spec.toml"); });
  EXPECT_NE(message.find("/nonexistent/spec.toml: file does not exist"), std::string::npos) << message;
}

TEST(SpecTable, BadArrayElementIsNamed) {
  testing::TempDir dir;
  SpecTable root = SpecTable::root(dir.write("a.toml", "widths = [10, -1]\n"));
  std::string message = testing::input_error_of([&] { root.integers_or("widths", {}, 1); });
  EXPECT_NE(message.find("found element -1"), std::string::npos) << message;
}

}  // namespace
}  // namespace colo
