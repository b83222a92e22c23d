// name_cell: how every table of colo shows a job name.

#include <gtest/gtest.h>

#include "colo/cli/job_table.h"

namespace colo::cli {
namespace {

TEST(NameCell, EscapesControlCharactersAndKeepsUtf8) {
  EXPECT_EQ(name_cell("lr-0.1"), "lr-0.1");
  EXPECT_EQ(name_cell("größe-λ-训练"), "größe-λ-训练");
  EXPECT_EQ(name_cell("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(name_cell("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(name_cell(std::string("nul\0!", 5)), "nul\\x00!");
  EXPECT_EQ(name_cell("next\xc2\x85line"), "next\\u0085line") << "C1 controls too";
  EXPECT_EQ(name_cell("a\\nb"), "a\\\\nb") << "a written backslash is told apart from an escape";
}

TEST(NameCell, ShowsBytesThatAreNotUtf8AsHex) {
  EXPECT_EQ(name_cell("\xff" "a"), "\\xffa");
  EXPECT_EQ(name_cell("cut\xe2\x82"), "cut\\xe2\\x82") << "a sequence cut short";
  EXPECT_EQ(name_cell("\xc0\xaf"), "\\xc0\\xaf") << "overlong";
  EXPECT_EQ(name_cell("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "a surrogate";
}

TEST(NameCell, CutsAtACharacterNeverInsideOneOrAnEscape) {
  EXPECT_EQ(name_cell("abcdef", 4), "abcd");
  EXPECT_EQ(name_cell("λλλλλ", 3), "λλλ") << "characters counted, not bytes";
  EXPECT_EQ(name_cell("ab\ncd", 3), "ab") << "\\n would not fit whole";
  EXPECT_EQ(name_cell("ab\ncd", 4), "ab\\n");
  EXPECT_EQ(name_cell("a\x1b", 4), "a");
  EXPECT_EQ(name_cell("", 4), "");
}

}  // namespace
}  // namespace colo::cli
