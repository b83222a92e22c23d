#include "colo/dist/int8_codec.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

namespace colo::dist {
namespace {

// 10,000 values: two whole runs of 4096 and a partial one; the middle run zeros.
at::Tensor three_runs() {
  at::manual_seed(5);
  at::Tensor v = at::randn({10000}) * 3;
  v.narrow(0, kInt8Chunk, kInt8Chunk).zero_();
  return v;
}

TEST(Int8Codec, EachValueComesBackWithinHalfItsRunsScale) {
  at::Tensor v = three_runs();
  at::Tensor packed = pack_int8(v);
  EXPECT_EQ(packed.scalar_type(), at::kByte);
  EXPECT_EQ(packed.numel(), 10000 + 4 * 3);
  EXPECT_EQ(int8_packed_bytes(10000), 10012);
  at::Tensor back = unpack_int8(packed, 10000, at::kCPU);
  ASSERT_EQ(back.numel(), 10000);
  for (int64_t run = 0; run < 3; ++run) {
    const int64_t begin = run * kInt8Chunk, length = std::min<int64_t>(kInt8Chunk, 10000 - begin);
    at::Tensor want = v.narrow(0, begin, length), got = back.narrow(0, begin, length);
    const double scale = want.abs().max().item<double>() / 127;
    EXPECT_LE((got - want).abs().max().item<double>(), scale / 2 * (1 + 1e-5)) << "run " << run;
  }
  EXPECT_TRUE(back.narrow(0, kInt8Chunk, kInt8Chunk).eq(0).all().item<bool>()) << "a run of zeros stays zeros";
  EXPECT_THROW(unpack_int8(packed, 9999, at::kCPU), std::runtime_error);
  EXPECT_THROW(unpack_int8(v, 10000, at::kCPU), std::runtime_error);
}

// Error feedback: what the codes of one payload miss is carried into the
// next, so the sum of everything unpacked plus the last residual is the sum
// of everything packed, however coarse each payload is.
TEST(Int8Codec, TheResidualCarriesWhatTheCodesMissedIntoTheNextPayload) {
  at::manual_seed(6);
  at::Tensor residual = at::zeros({5000});
  at::Tensor sent = at::zeros({5000}, at::kDouble), given = at::zeros({5000}, at::kDouble);
  for (int step = 0; step < 50; ++step) {
    at::Tensor g = at::randn({5000});
    g[step] = 1000;  // one large value coarsens its whole run's codes
    given += g.to(at::kDouble);
    sent += unpack_int8(pack_int8(g, &residual), 5000, at::kCPU).to(at::kDouble);
  }
  EXPECT_TRUE(at::allclose(sent + residual.to(at::kDouble), given, 0, 1e-2));
  // Without the residual, the small values of each coarse run would be lost.
  EXPECT_GT(residual.abs().max().item<double>(), 0);
}

}  // namespace
}  // namespace colo::dist
