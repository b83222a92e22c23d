#include "colo/core/units.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace colo {

std::optional<int64_t> parse_bytes(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  double value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string unit;
  for (const char* p = end; *p; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p))) unit += static_cast<char>(std::toupper(*p));
  }
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KIB") scale = 1024.0;
  else if (unit == "M" || unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  else if (unit == "TB") scale = 1e12;
  else return std::nullopt;
  const double bytes = value * scale + 0.5;
  if (bytes >= 0x1p62) return std::nullopt;  // no GPU holds 4 EiB; beyond int64, the cast would wrap
  return static_cast<int64_t>(bytes);
}

std::optional<std::vector<int64_t>> parse_shape(const std::string& text) {
  std::vector<int64_t> shape;
  size_t start = 0;
  while (true) {
    size_t end = text.find('x', start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 12) {
      return std::nullopt;
    }
    int64_t v = std::stoll(part);
    if (v < 1) return std::nullopt;
    shape.push_back(v);
    if (end == std::string::npos) return shape;
    start = end + 1;
  }
}

}  // namespace colo
