#pragma once
// Plain-text tables for terminals, printed row by row as results arrive.

#include <cstdio>
#include <string>
#include <vector>

namespace colo {

struct Column {
  std::string title;
  int width;           // characters (UTF-8 ones count one each); cells are right-aligned, titles too
};

// Prints a header once, then one aligned row per call. Not thread-safe.
class TablePrinter {
 public:
  TablePrinter(std::vector<Column> columns, std::FILE* out = stdout);
  void header();
  void row(const std::vector<std::string>& cells);

 private:
  std::vector<Column> columns_;
  std::FILE* out_;
};

// Formatting helpers for cells.
std::string fixed(double value, int decimals);
std::string percent(double fraction, int decimals = 1);
std::string bytes_human(double bytes);  // "1.5 GiB"

}  // namespace colo
