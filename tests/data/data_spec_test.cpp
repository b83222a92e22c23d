#include "colo/data/data_spec.h"

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/data/dataset_registry.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::data {
namespace {

DataSpec parse(const std::string& text) {
  testing::TempDir dir;
  SpecTable root = SpecTable::root(dir.write("s.toml", text));
  return parse_data_spec(*root.table("data"));
}

std::string error_of(const std::string& text) {
  return testing::input_error_of([&] { parse(text); });
}

TEST(DataSpec, FashionMnistDefaultsToDebiansPath) {
  DataSpec spec = parse("[data]\nname = \"fashion-mnist\"\n");
  EXPECT_EQ(spec.path, "/usr/share/datasets/fashion-mnist");
}

TEST(DataSpec, SyntheticTakesShapeAndSizes) {
  DataSpec spec = parse("[data]\nname = \"synthetic\"\nshape = [3, 32, 32]\nclasses = 100\ntrain_size = 64\n");
  EXPECT_EQ(spec.shape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(spec.classes, 100);
  EXPECT_EQ(spec.train_size, 64);
}

TEST(DataSpec, UnknownDataSetIsRejected) {
  EXPECT_NE(error_of("[data]\nname = \"imagenet\"\n").find("data.name: expected one of fashion-mnist"),
            std::string::npos);
}

TEST(DataSpec, FieldOfAnotherReaderIsRejected) {
  EXPECT_NE(error_of("[data]\nname = \"fashion-mnist\"\nshape = [1]\n").find("data.shape: unknown field"),
            std::string::npos);
}

TEST(DataSpec, CifarNeedsAPath) {
  EXPECT_NE(error_of("[data]\nname = \"cifar10\"\n").find("data.path"), std::string::npos);
}

TEST(DataSpec, MissingDataDirectoryIsReportedOnLoad) {
  DataSpec spec = parse("[data]\nname = \"mnist\"\npath = \"/nonexistent/mnist\"\n");
  try {
    load_dataset(spec);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/mnist: data directory does not exist"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace colo::data
