#include "colo/core/table.h"

#include <cmath>

namespace colo {
namespace {

// Characters of UTF-8 text: every byte but continuation bytes (10xxxxxx),
// so that a cell of non-ASCII text is padded as wide as it shows (East
// Asian wide characters, two columns on a terminal, count one).
int characters(const std::string& text) {
  int count = 0;
  for (unsigned char byte : text) count += (byte & 0xC0) != 0x80;
  return count;
}

}  // namespace

TablePrinter::TablePrinter(std::vector<Column> columns, std::FILE* out)
    : columns_(std::move(columns)), out_(out) {}

void TablePrinter::header() {
  std::vector<std::string> titles;
  for (const auto& column : columns_) titles.push_back(column.title);
  row(titles);
}

void TablePrinter::row(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < columns_.size(); ++i) {
    const std::string& cell = i < cells.size() ? cells[i] : std::string();
    int pad = columns_[i].width - characters(cell);
    if (i > 0) line += "  ";
    line += std::string(pad > 0 ? pad : 0, ' ') + cell;
  }
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string percent(double fraction, int decimals) { return fixed(100.0 * fraction, decimals) + "%"; }

std::string bytes_human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  return fixed(bytes, unit == 0 ? 0 : 1) + " " + units[unit];
}

}  // namespace colo
