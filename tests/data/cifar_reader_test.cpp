#include "colo/data/cifar_reader.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/core/paths.h"
#include "support/temp_dir.h"

namespace colo::data {
namespace {

Split random_split(int64_t n) {
  return Split{at::randint(0, 256, {n, 3, 32, 32}, at::kByte), at::randint(0, 10, {n}, at::kLong)};
}

TEST(CifarReader, RoundTripsBatchFiles) {
  testing::TempDir dir;
  Split a = random_split(7), b = random_split(5);
  write_cifar_batch(dir.file("a.bin"), a);
  write_cifar_batch(dir.file("b.bin"), b);
  Split read = read_cifar_batches({dir.file("a.bin"), dir.file("b.bin")});
  ASSERT_EQ(read.size(), 12);
  EXPECT_TRUE(read.inputs.narrow(0, 0, 7).equal(a.inputs));
  EXPECT_TRUE(read.labels.narrow(0, 7, 5).equal(b.labels));
}

TEST(CifarReader, PixelLayoutIsChannelPlanes) {
  testing::TempDir dir;
  std::string record(kCifarRecordBytes, '\0');
  record[0] = 3;                    // label
  record[1 + 1024 + 32 + 2] = 77;   // green plane, row 1, column 2
  Split read = read_cifar_batches({dir.write("one.bin", record)});
  EXPECT_EQ(read.labels[0].item<int64_t>(), 3);
  EXPECT_EQ(read.inputs[0][1][1][2].item<uint8_t>(), 77);
  EXPECT_EQ(read.inputs.sum().item<int64_t>(), 77);
}

TEST(CifarReader, ReadsADirectoryWithFiveTrainingBatches) {
  testing::TempDir dir;
  for (int i = 1; i <= 5; ++i) write_cifar_batch(dir.file("data_batch_" + std::to_string(i) + ".bin"), random_split(4));
  write_cifar_batch(dir.file("test_batch.bin"), random_split(3));
  Dataset dataset = read_cifar10(dir.path());
  EXPECT_EQ(dataset.train.size(), 20);
  EXPECT_EQ(dataset.test.size(), 3);
  EXPECT_EQ(dataset.shape.sample_shape, (std::vector<int64_t>{3, 32, 32}));
}

TEST(CifarReader, TruncatedFileIsRejected) {
  testing::TempDir dir;
  write_cifar_batch(dir.file("full.bin"), random_split(3));
  auto path = dir.write("cut.bin", read_file(dir.file("full.bin")).substr(0, 2 * kCifarRecordBytes + 100));
  try {
    read_cifar_batches({path});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(CifarReader, LabelAboveNineIsRejected) {
  testing::TempDir dir;
  std::string record(kCifarRecordBytes, '\0');
  record[0] = 12;
  EXPECT_THROW(read_cifar_batches({dir.write("x.bin", record)}), InputError);
}

TEST(CifarReader, MissingBatchIsRejected) {
  testing::TempDir dir;
  EXPECT_THROW(read_cifar10(dir.path()), InputError);
}

}  // namespace
}  // namespace colo::data
