#pragma once
// Byte sizes the tests write their memory figures in.

#include <cstdint>

namespace colo::testing {

inline constexpr int64_t kGiB = int64_t{1} << 30;

}  // namespace colo::testing
