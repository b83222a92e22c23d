#include "colo/data/idx_reader.h"

#include <zlib.h>

#include <array>
#include <fstream>
#include <memory>

#include <ATen/ATen.h>

#include "colo/core/error.h"

namespace colo::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `size` bytes; returns how many were read before EOF/error.
size_t read_fully(gzFile file, void* buffer, size_t size) {
  size_t done = 0;
  auto* bytes = static_cast<unsigned char*>(buffer);
  while (done < size) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(size - done, 1u << 30));
    int got = gzread(file, bytes + done, chunk);
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

uint32_t big_endian(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

at::Tensor read_idx(const std::string& path, int expected_dims) {
  std::ifstream probe(path);
  if (!probe) throw InputError(path, "", "IDX file does not exist or cannot be read");
  probe.close();

  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) throw InputError(path, "", "cannot open IDX file");

  std::array<unsigned char, 4> magic{};
  if (read_fully(file.get(), magic.data(), 4) != 4) {
    throw InputError(path, "", "truncated IDX file: no 4-byte header");
  }
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0 || magic[3] > 4) {
    char found[16];
    std::snprintf(found, sizeof found, "0x%02x%02x%02x%02x", magic[0], magic[1], magic[2], magic[3]);
    throw InputError(path, "", std::string("wrong magic number ") + found +
                                   ": expected 0x0000080N (IDX, unsigned bytes, N dimensions)");
  }
  int dims = magic[3];
  if (expected_dims != 0 && dims != expected_dims) {
    throw InputError(path, "", "expected an IDX file of " + std::to_string(expected_dims) +
                                   " dimension(s), found " + std::to_string(dims));
  }

  std::vector<int64_t> sizes;
  int64_t total = 1;
  for (int d = 0; d < dims; ++d) {
    unsigned char raw[4];
    if (read_fully(file.get(), raw, 4) != 4) {
      throw InputError(path, "", "truncated IDX file: header ends inside the dimension sizes");
    }
    sizes.push_back(big_endian(raw));
    total *= sizes.back();
  }

  at::Tensor tensor = at::empty(sizes, at::kByte);
  size_t got = read_fully(file.get(), tensor.data_ptr(), static_cast<size_t>(total));
  if (got != static_cast<size_t>(total)) {
    throw InputError(path, "", "truncated IDX file: header promises " + std::to_string(total) +
                                   " bytes of data, found " + std::to_string(got));
  }
  return tensor;
}

void write_idx(const std::string& path, const at::Tensor& tensor) {
  at::Tensor bytes = tensor.to(at::kByte).contiguous();
  std::ofstream out(path, std::ios::binary);
  unsigned char magic[4] = {0, 0, 0x08, static_cast<unsigned char>(bytes.dim())};
  out.write(reinterpret_cast<const char*>(magic), 4);
  for (int64_t size : bytes.sizes()) {
    unsigned char raw[4] = {static_cast<unsigned char>(size >> 24), static_cast<unsigned char>(size >> 16),
                            static_cast<unsigned char>(size >> 8), static_cast<unsigned char>(size)};
    out.write(reinterpret_cast<const char*>(raw), 4);
  }
  out.write(static_cast<const char*>(bytes.data_ptr()), bytes.numel());
}

}  // namespace colo::data
