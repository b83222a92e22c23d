#pragma once
// Sizes as people write them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace colo {

// Parses "6GiB", "512MiB", "2G", "1.5 GB", "4096" (bytes) into bytes. Binary
// (KiB/MiB/GiB/TiB, and K/M/G/T) and decimal (KB/MB/GB/TB) units. nullopt
// when the text is not a size, or not one a machine could have (negative,
// infinite, NaN, 2^62 bytes or more).
std::optional<int64_t> parse_bytes(const std::string& text);

// "3x224x224" -> {3, 224, 224}; "128" -> {128}; nullopt unless every part
// is a positive integer.
std::optional<std::vector<int64_t>> parse_shape(const std::string& text);

}  // namespace colo
