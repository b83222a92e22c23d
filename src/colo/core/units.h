#pragma once
// Sizes as people write them.

#include <cstdint>
#include <optional>
#include <string>

namespace colo {

// Parses "6GiB", "512MiB", "2G", "1.5 GB", "4096" (bytes) into bytes. Binary
// (KiB/MiB/GiB/TiB, and K/M/G/T) and decimal (KB/MB/GB/TB) units. nullopt
// when the text is not a size.
std::optional<int64_t> parse_bytes(const std::string& text);

}  // namespace colo
