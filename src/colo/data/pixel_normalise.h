#pragma once
// Normalising a batch of uint8 images into the float inputs a model takes,
// in one pass (the tensor way, convert then multiply then add, reads and
// writes the batch three times).

#include <cstdint>

namespace colo::data {

// out[n][c][i] = in[n][c][i] * scale[c] + shift[c] for `samples` samples of
// `channels` planes of `plane` pixels each (uint8 [N, C, H, W] to float32
// [N, C, H, W]). For (x / 255 - mean) / std: scale = 1 / (255 std), shift =
// -mean / std.
void normalise_pixels(const uint8_t* in, int64_t samples, int64_t channels, int64_t plane, const float* scale,
                      const float* shift, float* out);

}  // namespace colo::data
