#include "colo/data/jpeg_codec.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <stdexcept>

#include <jpeglib.h>

namespace colo::data {
namespace {

// libjpeg reports errors through error_exit, which must not return: jump
// back to the caller with the message instead of letting it exit().
struct ErrorTrap {
  jpeg_error_mgr manager;
  std::jmp_buf back;
  char message[JMSG_LENGTH_MAX];
};

void trap_error(j_common_ptr info) {
  auto* trap = reinterpret_cast<ErrorTrap*>(info->err);
  (*info->err->format_message)(info, trap->message);
  std::longjmp(trap->back, 1);
}

void ignore_message(j_common_ptr) {}

// Routes libjpeg's errors to `trap` (the caller sets its jump point) and
// keeps its warnings (e.g. premature end) quiet.
void trap_errors(jpeg_decompress_struct* info, ErrorTrap* trap) {
  info->err = jpeg_std_error(&trap->manager);
  trap->manager.error_exit = trap_error;
  trap->manager.output_message = ignore_message;
}

// Starts decompressing `bytes` up to the end of the header; an error jumps
// to the caller's trap.
void read_header(jpeg_decompress_struct* info, const uint8_t* bytes, size_t size) {
  jpeg_create_decompress(info);
  jpeg_mem_src(info, bytes, static_cast<unsigned long>(size));
  jpeg_read_header(info, TRUE);
}

}  // namespace

bool read_jpeg_size(const uint8_t* bytes, size_t size, int64_t* width, int64_t* height, std::string* error) {
  jpeg_decompress_struct info;
  ErrorTrap trap;
  trap_errors(&info, &trap);
  if (setjmp(trap.back)) {
    jpeg_destroy_decompress(&info);
    *error = trap.message;
    return false;
  }
  read_header(&info, bytes, size);
  *width = info.image_width;
  *height = info.image_height;
  jpeg_destroy_decompress(&info);
  return true;
}

namespace {

// CMYK pixels to RGB with Pillow's arithmetic, so that a torchvision
// pipeline and colo's see the same pixels: R = (255 - K) - C (255 - K) / 255,
// rounded as Pillow rounds. Files with an Adobe marker (Photoshop's,
// Pillow's) store the inks inverted, 255 for none, and libjpeg hands them
// back as stored.
void cmyk_to_rgb(const uint8_t* cmyk, int64_t width, bool inverted, uint8_t* rgb) {
  auto ink = [inverted](uint8_t stored) { return inverted ? 255 - stored : int{stored}; };
  for (int64_t x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int paper = 255 - ink(cmyk[3]);
    for (int c = 0; c < 3; ++c) {
      const int product = ink(cmyk[c]) * paper + 128;
      rgb[c] = static_cast<uint8_t>(paper - (((product >> 8) + product) >> 8));
    }
  }
}

// Pixels decoded past each side of a wanted region (2 is enough for 2x
// chroma upsampling; more costs little).
constexpr int64_t kUpsamplingMargin = 4;

// Decodes the rows and columns of `wanted` (null: all of them).
bool decode(const uint8_t* bytes, size_t size, int scale_denominator, const PixelRegion* wanted, RgbImage* image,
            PixelRegion* decoded, std::string* error) {
  if (scale_denominator != 1 && scale_denominator != 2 && scale_denominator != 4 && scale_denominator != 8) {
    throw std::invalid_argument("decode_jpeg: scale denominator must be 1, 2, 4 or 8");
  }
  jpeg_decompress_struct info;
  ErrorTrap trap;
  trap_errors(&info, &trap);
  if (setjmp(trap.back)) {
    jpeg_destroy_decompress(&info);
    *error = trap.message;
    return false;
  }
  read_header(&info, bytes, size);
  // libjpeg converts every colour space but CMYK and YCCK to RGB itself;
  // those come out as CMYK and are converted row by row below.
  const bool cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
  info.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  info.scale_num = 1;
  info.scale_denom = static_cast<unsigned int>(scale_denominator);
  jpeg_start_decompress(&info);
  const int64_t full_width = info.output_width, full_height = info.output_height;
  PixelRegion region{0, 0, full_width, full_height};
  if (wanted) {
    // Chroma upsampling blends neighbouring pixels: decode a margin around
    // `wanted`, so its own pixels are those of a full decode.
    const int64_t x0 = std::clamp<int64_t>(wanted->x0 - kUpsamplingMargin, 0, full_width - 1);
    const int64_t y0 = std::clamp<int64_t>(wanted->y0 - kUpsamplingMargin, 0, full_height - 1);
    const int64_t x1 = std::clamp<int64_t>(wanted->x0 + wanted->width + kUpsamplingMargin, x0 + 1, full_width);
    const int64_t y1 = std::clamp<int64_t>(wanted->y0 + wanted->height + kUpsamplingMargin, y0 + 1, full_height);
    region = {x0, y0, x1 - x0, y1 - y0};
    if (region.width < full_width) {
      auto x = static_cast<JDIMENSION>(region.x0), width = static_cast<JDIMENSION>(region.width);
      jpeg_crop_scanline(&info, &x, &width);
      region.x0 = x;
      region.width = width;
    }
    if (region.y0 > 0) {
      region.y0 = jpeg_skip_scanlines(&info, static_cast<JDIMENSION>(region.y0));
      region.height = std::min(region.height, full_height - region.y0);
    }
  }
  image->width = region.width;
  image->height = region.height;
  image->pixels.resize(static_cast<size_t>(image->width * image->height * 3));
  std::vector<uint8_t> cmyk_row(cmyk ? static_cast<size_t>(image->width * 4) : 0);
  for (int64_t y = 0; y < region.height; ++y) {
    uint8_t* rgb = image->pixels.data() + static_cast<size_t>(y * image->width * 3);
    JSAMPROW row = cmyk ? cmyk_row.data() : rgb;
    jpeg_read_scanlines(&info, &row, 1);
    if (cmyk) cmyk_to_rgb(cmyk_row.data(), image->width, info.saw_Adobe_marker, rgb);
  }
  const bool whole = region.y0 + region.height == full_height;
  if (whole) {
    jpeg_finish_decompress(&info);
  } else {
    jpeg_abort_decompress(&info);
  }
  bool truncated = info.err->num_warnings > 0;
  jpeg_destroy_decompress(&info);
  if (truncated) {
    *error = "corrupt or truncated JPEG data";
    return false;
  }
  if (decoded) *decoded = region;
  return true;
}

}  // namespace

bool decode_jpeg(const uint8_t* bytes, size_t size, RgbImage* image, std::string* error, int scale_denominator) {
  return decode(bytes, size, scale_denominator, nullptr, image, nullptr, error);
}

bool decode_jpeg_region(const uint8_t* bytes, size_t size, int scale_denominator, const PixelRegion& wanted,
                        RgbImage* image, PixelRegion* decoded, std::string* error) {
  return decode(bytes, size, scale_denominator, &wanted, image, decoded, error);
}

namespace {

// Compresses `components`-channel interleaved rows given in `in_space`,
// stored in `jpeg_space` (with `adobe_marker` for CMYK and YCCK).
std::vector<uint8_t> compress(int64_t width, int64_t height, const uint8_t* pixels, int components,
                              J_COLOR_SPACE in_space, J_COLOR_SPACE jpeg_space, bool adobe_marker, int quality) {
  if (width <= 0 || height <= 0) throw std::invalid_argument("encode_jpeg: empty image");
  jpeg_compress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long length = 0;
  jpeg_mem_dest(&info, &buffer, &length);
  info.image_width = static_cast<JDIMENSION>(width);
  info.image_height = static_cast<JDIMENSION>(height);
  info.input_components = components;
  info.in_color_space = in_space;
  jpeg_set_defaults(&info);
  jpeg_set_colorspace(&info, jpeg_space);
  info.write_Adobe_marker = adobe_marker ? TRUE : FALSE;
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels) + static_cast<size_t>(info.next_scanline) * width * components;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  std::vector<uint8_t> out(buffer, buffer + length);
  std::free(buffer);
  jpeg_destroy_compress(&info);
  return out;
}

}  // namespace

std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality) {
  return compress(image.width, image.height, image.pixels.data(), 3, JCS_RGB, JCS_YCbCr, false, quality);
}

std::vector<uint8_t> encode_cmyk_jpeg(int64_t width, int64_t height, const std::vector<uint8_t>& inks, bool ycck,
                                      bool adobe_marker, int quality) {
  if (static_cast<int64_t>(inks.size()) != width * height * 4) {
    throw std::invalid_argument("encode_cmyk_jpeg: expected width * height * 4 bytes of inks");
  }
  return compress(width, height, inks.data(), 4, JCS_CMYK, ycck ? JCS_YCCK : JCS_CMYK, adobe_marker, quality);
}

}  // namespace colo::data
