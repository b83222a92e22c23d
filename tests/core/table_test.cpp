#include "colo/core/table.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(Table, RowsAreRightAlignedToColumnWidths) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  TablePrinter table({{"epoch", 5}, {"loss", 6}}, out);
  table.header();
  table.row({"1", "0.5"});
  std::fclose(out);
  EXPECT_EQ(std::string(buffer, size), "epoch    loss\n    1     0.5\n");
  std::free(buffer);
}

TEST(Table, ACellOfNonAsciiTextIsPaddedByItsCharactersNotItsBytes) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  TablePrinter table({{"name", 8}, {"mem", 5}}, out);
  table.row({"größe", "1"});  // 5 characters in 7 bytes
  table.row({"sizes", "2"});
  std::fclose(out);
  EXPECT_EQ(std::string(buffer, size), "   größe      1\n   sizes      2\n");
  std::free(buffer);
}

TEST(Table, FormatsBytesAndPercentages) {
  EXPECT_EQ(bytes_human(1536.0 * 1024 * 1024), "1.5 GiB");
  EXPECT_EQ(bytes_human(512), "512 B");
  EXPECT_EQ(percent(0.8456), "84.6%");
}

}  // namespace
}  // namespace colo
