#include "colo/data/idx_reader.h"

#include <zlib.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/core/paths.h"
#include "support/temp_dir.h"

namespace colo::data {
namespace {

void gzip_file(const std::string& from, const std::string& to) {
  std::string raw = read_file(from);
  gzFile out = gzopen(to.c_str(), "wb");
  gzwrite(out, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(out);
}

std::string error_of(const std::string& path, int dims) {
  try {
    read_idx(path, dims);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(IdxReader, RoundTripsRawFiles) {
  testing::TempDir dir;
  at::Tensor images = at::randint(0, 256, {5, 4, 3}, at::kByte);
  write_idx(dir.file("x-idx3-ubyte"), images);
  at::Tensor read = read_idx(dir.file("x-idx3-ubyte"), 3);
  EXPECT_EQ(read.sizes(), images.sizes());
  EXPECT_TRUE(read.equal(images));
}

TEST(IdxReader, ReadsGzipCompressedFiles) {
  testing::TempDir dir;
  at::Tensor labels = at::randint(0, 10, {100}, at::kByte);
  write_idx(dir.file("raw"), labels);
  gzip_file(dir.file("raw"), dir.file("labels.gz"));
  EXPECT_TRUE(read_idx(dir.file("labels.gz"), 1).equal(labels));
}

TEST(IdxReader, WrongMagicNumberIsRejected) {
  testing::TempDir dir;
  auto path = dir.write("bad", std::string("\x00\x00\x09\x01\x00\x00\x00\x01\x05", 9));
  EXPECT_NE(error_of(path, 1).find("wrong magic number 0x00000901"), std::string::npos)
      << error_of(path, 1);
}

TEST(IdxReader, TruncatedDataIsRejected) {
  testing::TempDir dir;
  write_idx(dir.file("full"), at::ones({10, 2, 2}, at::kByte));
  std::string raw = read_file(dir.file("full"));
  auto path = dir.write("cut", raw.substr(0, raw.size() - 7));
  std::string message = error_of(path, 3);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("promises 40 bytes of data, found 33"), std::string::npos) << message;
}

TEST(IdxReader, TruncatedGzipIsRejected) {
  testing::TempDir dir;
  write_idx(dir.file("full"), at::randint(0, 256, {200, 28, 28}, at::kByte));
  gzip_file(dir.file("full"), dir.file("full.gz"));
  std::string gz = read_file(dir.file("full.gz"));
  auto path = dir.write("cut.gz", gz.substr(0, gz.size() / 2));
  EXPECT_NE(error_of(path, 3).find("truncated"), std::string::npos) << error_of(path, 3);
}

TEST(IdxReader, UnexpectedDimensionCountIsRejected) {
  testing::TempDir dir;
  write_idx(dir.file("labels"), at::ones({4}, at::kByte));
  EXPECT_NE(error_of(dir.file("labels"), 3).find("expected an IDX file of 3 dimension(s), found 1"),
            std::string::npos);
}

TEST(IdxReader, MissingFileIsRejected) {
  EXPECT_NE(error_of("/nonexistent/train-images-idx3-ubyte", 3).find("does not exist"),
            std::string::npos);
}

}  // namespace
}  // namespace colo::data
