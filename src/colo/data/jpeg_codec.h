#pragma once
// JPEG to and from 8-bit RGB pixels, through libjpeg(-turbo).

#include <cstdint>
#include <string>
#include <vector>

namespace colo::data {

// An 8-bit RGB image, rows top to bottom, pixels interleaved (HWC).
struct RgbImage {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3
};

// Decodes a JPEG (grey-scale and CMYK ones become RGB). Returns false and sets
// `*error` to libjpeg's reason when the bytes are not a decodable JPEG.
// Never aborts the process. Thread-safe. `scale_denominator` (1, 2, 4 or 8)
// decodes at 1/d of the full size in the DCT, which costs a fraction of a
// full decode: the image is then ceil(width / d) x ceil(height / d).
bool decode_jpeg(const uint8_t* bytes, size_t size, RgbImage* image, std::string* error, int scale_denominator = 1);

// A rectangle of an image's pixels: columns [x0, x0 + width), rows
// [y0, y0 + height).
struct PixelRegion {
  int64_t x0 = 0, y0 = 0, width = 0, height = 0;
};

// decode_jpeg of only `wanted`, given in the pixels of the image decoded at
// 1/scale_denominator and clipped to it. Rows above and below it are skipped
// and columns beside it are not transformed, which costs less than a full
// decode. `*decoded` is the region `image` holds: `wanted` and a margin,
// widened to the JPEG's block boundaries. Within `wanted` its pixels are
// those a full decode gives. Damage below the region may go unnoticed.
bool decode_jpeg_region(const uint8_t* bytes, size_t size, int scale_denominator, const PixelRegion& wanted,
                        RgbImage* image, PixelRegion* decoded, std::string* error);

// Reads only the JPEG's header: its full width and height. Returns false and
// sets `*error` as decode_jpeg does.
bool read_jpeg_size(const uint8_t* bytes, size_t size, int64_t* width, int64_t* height, std::string* error);

// Encodes `image` at `quality` (1-100). Throws std::invalid_argument for an
// empty image.
std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality);

// Encodes CMYK inks (width * height * 4 bytes, C, M, Y, K per pixel, as
// stored: inverted, 255 for no ink, when `adobe_marker` is set, as
// Photoshop and Pillow write them) as a CMYK JPEG, or YCCK with `ycck`
// (which only the Adobe marker announces). For tests and tools that need
// such files. Throws std::invalid_argument for an empty image or a wrong
// number of bytes.
std::vector<uint8_t> encode_cmyk_jpeg(int64_t width, int64_t height, const std::vector<uint8_t>& inks, bool ycck,
                                      bool adobe_marker, int quality);

}  // namespace colo::data
