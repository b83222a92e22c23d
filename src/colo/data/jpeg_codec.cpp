#include "colo/data/jpeg_codec.h"

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

bool decode_jpeg(const uint8_t* bytes, size_t size, RgbImage* image, std::string* error, int scale_denominator) {
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
  info.out_color_space = JCS_RGB;
  info.scale_num = 1;
  info.scale_denom = static_cast<unsigned int>(scale_denominator);
  jpeg_start_decompress(&info);
  image->width = info.output_width;
  image->height = info.output_height;
  image->pixels.resize(static_cast<size_t>(image->width * image->height * 3));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = image->pixels.data() + static_cast<size_t>(info.output_scanline) * image->width * 3;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  bool truncated = info.err->num_warnings > 0;
  jpeg_destroy_decompress(&info);
  if (truncated) {
    *error = "corrupt or truncated JPEG data";
    return false;
  }
  return true;
}

std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality) {
  if (image.width <= 0 || image.height <= 0) throw std::invalid_argument("encode_jpeg: empty image");
  jpeg_compress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long length = 0;
  jpeg_mem_dest(&info, &buffer, &length);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(image.pixels.data()) + static_cast<size_t>(info.next_scanline) * image.width * 3;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  std::vector<uint8_t> out(buffer, buffer + length);
  std::free(buffer);
  jpeg_destroy_compress(&info);
  return out;
}

}  // namespace colo::data
