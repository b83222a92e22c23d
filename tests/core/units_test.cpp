#include "colo/core/units.h"

#include <gtest/gtest.h>

namespace colo {
namespace {

TEST(ParseBytes, ReadsBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_bytes("6GiB"), int64_t{6} << 30);
  EXPECT_EQ(parse_bytes("512 MiB"), int64_t{512} << 20);
  EXPECT_EQ(parse_bytes("1.5 GB"), int64_t{1500000000});
  EXPECT_EQ(parse_bytes("4096"), int64_t{4096});
  EXPECT_EQ(parse_bytes("2t"), int64_t{2} << 40);
}

TEST(ParseBytes, RefusesWhatNoMachineHasInsteadOfWrappingAround) {
  // 99999999999999GiB was stored as -9223372036854775808.
  for (const char* text : {"99999999999999GiB", "1e30GiB", "inf", "nan GiB", "-1GiB", "4EiB", "lots", ""}) {
    EXPECT_FALSE(parse_bytes(text).has_value()) << text;
  }
  EXPECT_EQ(parse_bytes("1048575TiB"), int64_t{1048575} << 40);  // just under 2^60
}

}  // namespace
}  // namespace colo
