#pragma once
// Float32 values as 8-bit codes, for the parameter server's frames through
// host memory (param_server.compression = "int8"): each run of kInt8Chunk
// values becomes that many signed bytes and one float32 scale (the run's
// largest magnitude / 127). A packed payload is a uint8 tensor, the scales
// first, then the codes: about a quarter of float32's bytes.

#include <cstdint>

#include <ATen/Tensor.h>
#include <c10/core/Device.h>

namespace colo::dist {

inline constexpr int64_t kInt8Chunk = 4096;

// Bytes of `values` values packed.
int64_t int8_packed_bytes(int64_t values);

// `values` (float32, contiguous, any device) packed, on the same device.
// With `residual` (float32, as many values, same device) the residual is
// added first and then holds what the codes miss: error feedback, so that
// what one payload rounds away the next carries.
at::Tensor pack_int8(const at::Tensor& values, at::Tensor* residual = nullptr);

// The float32 values `packed` (from pack_int8, any device) carries, `values`
// of them, on `device`. Throws std::runtime_error when its size is not that
// of `values` values packed.
at::Tensor unpack_int8(const at::Tensor& packed, int64_t values, c10::Device device);

}  // namespace colo::dist
