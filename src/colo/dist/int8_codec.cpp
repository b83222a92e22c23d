#include "colo/dist/int8_codec.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

namespace colo::dist {
namespace {

int64_t chunks_of(int64_t values) { return (values + kInt8Chunk - 1) / kInt8Chunk; }

}  // namespace

int64_t int8_packed_bytes(int64_t values) { return values + 4 * chunks_of(values); }

at::Tensor pack_int8(const at::Tensor& values, at::Tensor* residual) {
  const int64_t n = values.numel();
  const int64_t chunks = chunks_of(n);
  at::Tensor v = values.reshape({n}).to(at::kFloat);
  if (residual != nullptr) v = v + *residual;
  at::Tensor padded = at::zeros({chunks * kInt8Chunk}, v.options());
  padded.narrow(0, 0, n).copy_(v);
  at::Tensor runs = padded.view({chunks, kInt8Chunk});
  // A run of zeros keeps scale 0 and codes 0; its division is by 1.
  at::Tensor scale = runs.abs().amax(1).div_(127.0);
  at::Tensor divisor = at::where(scale > 0, scale, at::ones_like(scale));
  at::Tensor codes = runs.div(divisor.unsqueeze(1)).round_().clamp_(-127, 127).to(at::kChar);
  if (residual != nullptr) {
    at::Tensor sent = codes.to(at::kFloat).mul_(scale.unsqueeze(1)).reshape({chunks * kInt8Chunk}).narrow(0, 0, n);
    residual->copy_(v - sent);
  }
  at::Tensor packed = at::empty({int8_packed_bytes(n)}, v.options().dtype(at::kByte));
  packed.narrow(0, 0, 4 * chunks).copy_(scale.view(at::kByte));
  packed.narrow(0, 4 * chunks, n).copy_(codes.reshape({chunks * kInt8Chunk}).narrow(0, 0, n).view(at::kByte));
  return packed;
}

at::Tensor unpack_int8(const at::Tensor& packed, int64_t values, c10::Device device) {
  if (packed.scalar_type() != at::kByte || packed.numel() != int8_packed_bytes(values)) {
    throw std::runtime_error("an int8 payload of " + std::to_string(packed.numel()) + " bytes, expected " +
                             std::to_string(int8_packed_bytes(values)) + " for " + std::to_string(values) +
                             " values");
  }
  const int64_t chunks = chunks_of(values);
  at::Tensor bytes = packed.to(device).contiguous();
  at::Tensor scale = bytes.narrow(0, 0, 4 * chunks).clone().view(at::kFloat);
  at::Tensor codes = at::zeros({chunks * kInt8Chunk}, bytes.options().dtype(at::kFloat));
  codes.narrow(0, 0, values).copy_(bytes.narrow(0, 4 * chunks, values).view(at::kChar));
  return codes.view({chunks, kInt8Chunk}).mul_(scale.unsqueeze(1)).reshape({chunks * kInt8Chunk}).narrow(0, 0, values);
}

}  // namespace colo::dist
