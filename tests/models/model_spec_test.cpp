#include "colo/models/model_spec.h"

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/models/model_registry.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::models {
namespace {

ModelSpec parse(const std::string& text) {
  testing::TempDir dir;
  SpecTable root = SpecTable::root(dir.write("s.toml", text));
  return parse_model_spec(*root.table("model"));
}

std::string error_of(const std::string& text) {
  return testing::input_error_of([&] { parse(text); });
}

TEST(ModelSpec, RegistryHoldsTheFourZooModels) {
  EXPECT_EQ(model_names(), (std::vector<std::string>{"mlp", "lenet", "resnet", "transformer"}));
}

TEST(ModelSpec, ReadsTheNamedModelsFields) {
  ModelSpec spec = parse("[model]\nname = \"resnet\"\ndepth = 34\nwidth = 0.5\n");
  EXPECT_EQ(spec.depth, 34);
  EXPECT_DOUBLE_EQ(spec.width, 0.5);
}

TEST(ModelSpec, UnknownModelIsRejected) {
  EXPECT_NE(error_of("[model]\nname = \"vgg\"\n").find("model.name: expected one of mlp, lenet, resnet, transformer"),
            std::string::npos);
}

TEST(ModelSpec, MissingNameIsRejected) {
  EXPECT_NE(error_of("[model]\nwidths = [3]\n").find("model.name: missing required field"),
            std::string::npos);
}

TEST(ModelSpec, FieldOfAnotherModelIsRejected) {
  EXPECT_NE(error_of("[model]\nname = \"mlp\"\ndepth = 18\n").find("model.depth: unknown field"),
            std::string::npos);
}

TEST(ModelSpec, UnsupportedResNetDepthIsRejected) {
  EXPECT_NE(error_of("[model]\nname = \"resnet\"\ndepth = 20\n").find("expected 18, 34 or 50"),
            std::string::npos);
}

TEST(ModelSpec, HeadsMustDivideModelWidth) {
  EXPECT_NE(error_of("[model]\nname = \"transformer\"\nd_model = 30\nheads = 4\n").find("model.heads"),
            std::string::npos);
}

TEST(ModelSpec, WrongTypeIsRejected) {
  EXPECT_NE(error_of("[model]\nname = \"mlp\"\nwidths = \"wide\"\n").find("expected an array of integers"),
            std::string::npos);
}

}  // namespace
}  // namespace colo::models
