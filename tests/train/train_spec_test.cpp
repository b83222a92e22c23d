#include "colo/train/train_spec.h"

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::train {
namespace {

const std::string kValid = R"(
seed = 3
epochs = 2
batch_size = 64
[model]
name = "mlp"
widths = [32]
[data]
name = "synthetic"
shape = [8]
[optimizer]
name = "adam"
lr = 0.002
[schedule]
name = "cosine"
)";

std::string error_of(const std::string& text) {
  testing::TempDir dir;
  return testing::input_error_of([&] { parse_train_spec(dir.write("spec.toml", text)); });
}

TEST(TrainSpec, ParsesACompleteSpec) {
  testing::TempDir dir;
  TrainSpec spec = parse_train_spec(dir.write("spec.toml", kValid));
  EXPECT_EQ(spec.seed, 3u);
  EXPECT_EQ(spec.epochs, 2);
  EXPECT_EQ(spec.batch_size, 64);
  EXPECT_EQ(spec.model.widths, (std::vector<int64_t>{32}));
  EXPECT_EQ(spec.optimizer.name, "adam");
  EXPECT_DOUBLE_EQ(spec.optimizer.lr, 0.002);
  EXPECT_EQ(spec.schedule.name, "cosine");
  EXPECT_EQ(spec.device, "auto");
}

TEST(TrainSpec, BatchSizeZeroIsRejected) {
  std::string message = error_of("batch_size = 0\n" + kValid.substr(kValid.find("[model]")));
  EXPECT_NE(message.find("spec.toml:1: batch_size: expected an integer in [1, 16777216], got 0"),
            std::string::npos) << message;
}

TEST(TrainSpec, MissingModelTableIsRejected) {
  EXPECT_NE(error_of("epochs = 1\n[data]\nname = \"synthetic\"\n").find("model: missing required table"),
            std::string::npos);
}

TEST(TrainSpec, UnknownTopLevelFieldIsRejected) {
  EXPECT_NE(error_of("learning_rate = 0.1\n" + kValid).find("learning_rate: unknown field"),
            std::string::npos);
}

TEST(TrainSpec, WrongTypeIsRejected) {
  EXPECT_NE(error_of("epochs = \"two\"\n" + kValid.substr(kValid.find("[model]")))
                .find("epochs: expected an integer"),
            std::string::npos);
}

TEST(TrainSpec, NesterovWithoutMomentumIsRejected) {
  std::string text = kValid.substr(0, kValid.find("[optimizer]")) +
                     "[optimizer]\nname = \"sgd\"\nnesterov = true\n";
  EXPECT_NE(error_of(text).find("optimizer.nesterov"), std::string::npos);
}

TEST(TrainSpec, AdamFieldOnSgdIsRejected) {
  std::string text = kValid.substr(0, kValid.find("[optimizer]")) +
                     "[optimizer]\nname = \"sgd\"\nbetas = [0.9, 0.99]\n";
  EXPECT_NE(error_of(text).find("optimizer.betas: unknown field"), std::string::npos);
}

TEST(TrainSpec, MalformedFileIsRejected) {
  EXPECT_NE(error_of("epochs = = 2\n").find("malformed TOML"), std::string::npos);
}

TEST(TrainSpec, MissingFileIsRejected) {
  EXPECT_THROW(parse_train_spec("/nonexistent.toml"), InputError);
}

}  // namespace
}  // namespace colo::train
