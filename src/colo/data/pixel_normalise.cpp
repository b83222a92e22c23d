#include "colo/data/pixel_normalise.h"

namespace colo::data {

void normalise_pixels(const uint8_t* in, int64_t samples, int64_t channels, int64_t plane, const float* scale,
                      const float* shift, float* out) {
  for (int64_t n = 0; n < samples; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const float a = scale[c], b = shift[c];
      const uint8_t* from = in + (n * channels + c) * plane;
      float* to = out + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) to[i] = static_cast<float>(from[i]) * a + b;
    }
  }
}

}  // namespace colo::data
