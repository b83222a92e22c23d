#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "cli/colo_process.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "cli/shared_producer.h"
#include "colo/core/stopwatch.h"

namespace colo {
namespace {

using testing::run_colo;
using testing::TempDir;

const std::string kFashion = "/usr/share/datasets/fashion-mnist";

// Lines in a JSON Lines file that may not exist yet.
size_t read_json_lines_if_any(const std::string& path) {
  return path_exists(path) ? read_json_lines(path).size() : 0;
}

std::string mlp_spec(const std::string& output, const std::string& data_table,
                     const std::string& top = "") {
  return top + "device = \"cpu\"\nepochs = 1\noutput = \"" + output + "\"\n" +
         "[model]\nname = \"mlp\"\nwidths = [16]\n" + data_table;
}

// Bad input: exit status 2, exactly one line on stderr naming `needle`, and
// no output directory created.
void expect_rejected(const TempDir& dir, const std::string& spec_text, const std::string& needle) {
  std::string spec = dir.write("spec.toml", spec_text);
  auto run = run_colo(dir, "train " + spec);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find(needle), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("out"))) << "nothing may be written";
}

TEST(ColoTrain, MissingSpecFileIsRejected) {
  TempDir dir;
  auto run = run_colo(dir, "train " + dir.file("absent.toml"));
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("absent.toml: file does not exist"), std::string::npos) << run.err;
}

TEST(ColoTrain, MalformedSpecIsRejected) {
  TempDir dir;
  expect_rejected(dir, "epochs = [\n", "malformed TOML");
}

TEST(ColoTrain, UnknownModelIsRejected) {
  TempDir dir;
  expect_rejected(dir, "output = \"" + dir.file("out") + "\"\n[model]\nname = \"alexnet\"\n[data]\n",
                  "model.name: expected one of mlp, lenet, resnet, transformer, got \"alexnet\"");
}

TEST(ColoTrain, UnknownFieldIsRejected) {
  TempDir dir;
  expect_rejected(dir, mlp_spec(dir.file("out"), "[data]\nname = \"synthetic\"\n", "epoch = 3\n"),
                  "epoch: unknown field");
}

TEST(ColoTrain, WrongTypeIsRejected) {
  TempDir dir;
  expect_rejected(dir, mlp_spec(dir.file("out"), "[data]\nname = \"synthetic\"\n", "seed = 1.5\n"),
                  "seed: expected an integer >= 0, got 1.5");
}

TEST(ColoTrain, BatchSizeZeroIsRejected) {
  TempDir dir;
  expect_rejected(dir, mlp_spec(dir.file("out"), "[data]\nname = \"synthetic\"\n", "batch_size = 0\n"),
                  "batch_size: expected an integer in [1,");
}

TEST(ColoTrain, AbsentDataDirectoryIsRejected) {
  TempDir dir;
  expect_rejected(dir, mlp_spec(dir.file("out"), "[data]\nname = \"mnist\"\npath = \"/nonexistent/mnist\"\n"),
                  "/nonexistent/mnist: data directory does not exist");
}

// A data directory holding the real Fashion-MNIST files except one, which
// `damage` replaces.
std::string damaged_copy(const TempDir& dir, const std::string& file, const std::string& contents) {
  std::string data = dir.file("data");
  make_directories(data);
  for (const auto& name : list_directory(kFashion)) {
    if (name != file + ".gz") {
      std::ofstream(data + "/" + name, std::ios::binary) << read_file(kFashion + "/" + name);
    }
  }
  std::ofstream(data + "/" + file, std::ios::binary) << contents;
  return data;
}

TEST(ColoTrain, TruncatedDataFileIsRejected) {
  TempDir dir;
  std::string header("\x00\x00\x08\x01\x00\x00\x27\x10", 8);  // 10,000 labels promised
  std::string data = damaged_copy(dir, "t10k-labels-idx1-ubyte", header + std::string(500, '\1'));
  expect_rejected(dir, mlp_spec(dir.file("out"), "[data]\nname = \"mnist\"\npath = \"" + data + "\"\n"),
                  "t10k-labels-idx1-ubyte: truncated IDX file: header promises 10000 bytes of data, found 500");
}

TEST(ColoTrain, WrongMagicNumberIsRejected) {
  TempDir dir;
  std::string data = damaged_copy(dir, "t10k-labels-idx1-ubyte", std::string("\x00\x00\x0d\x01\x00\x00\x00\x01\x01", 9));
  expect_rejected(dir, mlp_spec(dir.file("out"), "[data]\nname = \"mnist\"\npath = \"" + data + "\"\n"),
                  "wrong magic number 0x00000d01");
}

TEST(ColoTrain, UnwritableOutputDirectoryIsRejected) {
  TempDir dir;
  dir.write("plainfile", "x");
  std::string spec = dir.write("spec.toml", mlp_spec(dir.file("plainfile/out"), "[data]\nname = \"synthetic\"\n"));
  auto run = run_colo(dir, "train " + spec);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("output: cannot create output directory"), std::string::npos) << run.err;
}

TEST(ColoTrain, HelpDocumentsEveryField) {
  TempDir dir;
  auto run = run_colo(dir, "train --help");
  EXPECT_EQ(run.status, 0);
  for (const char* field : {"seed", "device", "output", "epochs", "max_steps", "batch_size",
                            "checkpoint_every", "widths", "depth", "d_model", "patch_size",
                            "train_size", "augment", "prefetch", "on_device", "momentum",
                            "nesterov", "weight_decay", "betas", "warmup_epochs", "min_lr"}) {
    EXPECT_NE(run.out.find(field), std::string::npos) << field;
  }
}

double final_test_accuracy(const std::string& output) {
  return read_json_lines(output + "/metrics.jsonl").back()["test_accuracy"].get<double>();
}

TEST(ColoTrain, ResumeIfAnyStartsAfreshAndThenContinuesFromTheCheckpoint) {
  TempDir dir;
  std::string spec = dir.write("spec.toml", mlp_spec(dir.file("out"), "[data]\nname = \"synthetic\"\n", "seed = 3\n"));
  auto first = run_colo(dir, "train " + spec + " --resume-if-any");
  ASSERT_EQ(first.status, 0) << first.err;
  auto one = read_json_lines(dir.file("out/metrics.jsonl"));
  ASSERT_EQ(one.size(), 1u);
  // The same command once more, the spec now asking for two epochs: it
  // continues from epoch 1's checkpoint and keeps epoch 1's record as it was.
  std::string text = read_file(spec);
  dir.write("spec.toml", text.replace(text.find("epochs = 1"), 10, "epochs = 2"));
  auto again = run_colo(dir, "train " + spec + " --resume-if-any");
  ASSERT_EQ(again.status, 0) << again.err;
  auto two = read_json_lines(dir.file("out/metrics.jsonl"));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], one[0]);
  EXPECT_EQ(two[1]["epoch"], 2);
  EXPECT_EQ(run_colo(dir, "train " + spec + " --resume --resume-if-any").status, 2);
}

TEST(ColoTrain, ResumeWithoutACheckpointIsRefusedAndWritesNothing) {
  TempDir dir;
  std::string spec = dir.write("spec.toml", mlp_spec(dir.file("out"), "[data]\nname = \"synthetic\"\n", "seed = 3\n"));
  auto run = run_colo(dir, "train " + spec + " --resume");
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("out/checkpoint.pt: no checkpoint to resume from"), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("out"))) << "the output folder was made";
  EXPECT_EQ(run.out, "") << "a table header for a run that never started";
}

TEST(ColoTrain, QuickstartMlpReaches84PercentOnFashionMnistIn2Epochs) {
  TempDir dir;
  auto run = run_colo(dir, std::string("train ") + COLO_SOURCE_DIR + "/examples/quickstart.toml --device cpu --out " + dir.file("q"));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("test_acc"), std::string::npos) << "prints a table";
  EXPECT_EQ(read_json_lines(dir.file("q/metrics.jsonl")).size(), 2u);
  EXPECT_GE(final_test_accuracy(dir.file("q")), 0.84);
}

TEST(ColoTrain, LeNetReaches87PercentOnFashionMnistIn3Epochs) {
  TempDir dir;
  auto run = run_colo(dir, std::string("train ") + COLO_SOURCE_DIR + "/examples/lenet.toml --device cpu --out " + dir.file("l"));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(read_json_lines(dir.file("l/metrics.jsonl")).size(), 3u);
  EXPECT_GE(final_test_accuracy(dir.file("l")), 0.87);
}

TEST(ColoTrain, TrainsFromASharedLoadersProducerAndReportsItsDataWait) {
  TempDir dir;
  testing::SharedProducer producer(dir, 96);
  const std::string& data = producer.data_file();
  std::string spec = dir.write(
      "spec.toml", "device = \"cpu\"\nepochs = 2\nbatch_size = 16\ncheckpoint_every = 0\n"
                   "[model]\nname = \"mlp\"\nwidths = [32]\n"
                   "[data]\nname = \"shared\"\nloader = \"" + data + "\"\n[optimizer]\nname = \"sgd\"\nlr = 0.05\n");
  auto run = run_colo(dir, "train " + spec + " --out " + dir.file("out"),
                      "COLO_PROGRESS_FILE=" + dir.file("job.progress"));
  ASSERT_EQ(run.status, 0) << run.err;
  auto records = read_json_lines(dir.file("out/metrics.jsonl"));
  ASSERT_EQ(records.size(), 2u);
  // An epoch is one pass over the producer's 96 images in batches of 16.
  EXPECT_EQ(records[1]["step"].get<int64_t>(), 12);
  EXPECT_TRUE(records[1]["test_accuracy"].is_null()) << "a producer serves no test split";
  EXPECT_GT(records[1]["train_accuracy"].get<double>(), 0.0);
  // Each epoch's wait for data, in the job's own metrics.
  for (const auto& r : records) {
    EXPECT_GE(r["data_wait_s"].get<double>(), 0.0) << r.dump();
    EXPECT_GE(r["data_wait_pct"].get<double>(), 0.0);
    EXPECT_LE(r["data_wait_pct"].get<double>(), 100.0);
  }
  auto progress = nlohmann::json::parse(read_file(dir.file("job.progress")));
  EXPECT_EQ(progress["samples"].get<int64_t>(), 192);
  EXPECT_GE(progress["data_wait_s"].get<double>(), 0.0);
  EXPECT_LE(progress["data_wait_s"].get<double>(), progress["train_s"].get<double>());
}

// `colo train A B` on a producer's batches: specs that agree share one
// consumer and one pass; a spec with another batch size reads through a
// consumer of its own, on its own schedule.
TEST(ColoTrain, TwoModelsSideBySideWritingOneOutputFolderAreRefused) {
  TempDir dir;
  std::string spec = dir.write("spec.toml", mlp_spec(dir.file("out"), "[data]\nname = \"synthetic\"\n"));
  auto run = run_colo(dir, "train " + spec + " " + spec);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("output: a folder of its own"), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("out")));
  EXPECT_EQ(run_colo(dir, "train " + spec + " " + spec + " --out " + dir.file("both")).status, 0);
}

TEST(ColoTrain, ModelsSideBySideReadASharedLoadersProducerTogetherOrEachOnItsOwn) {
  TempDir dir;
  testing::SharedProducer producer(dir, 96);
  auto spec = [&](const std::string& name, int batch, const std::string& widths) {
    return dir.write(name + ".toml", "device = \"cpu\"\nepochs = 2\nbatch_size = " + std::to_string(batch) +
                                         "\ncheckpoint_every = 0\n[model]\nname = \"mlp\"\nwidths = [" + widths +
                                         "]\n[data]\nname = \"shared\"\nloader = \"" + producer.data_file() +
                                         "\"\n[optimizer]\nname = \"sgd\"\nlr = 0.05\n");
  };
  const std::string a = spec("a", 16, "32"), b = spec("b", 16, "8"), c = spec("c", 8, "16");
  auto last_step = [&](const std::string& out) {
    auto records = read_json_lines(dir.file(out));
    EXPECT_EQ(records.size(), 2u) << out;
    return records.empty() ? -1 : records.back()["step"].get<int64_t>();
  };
  auto together = run_colo(dir, "train " + a + " " + b + " --out " + dir.file("ab"));
  ASSERT_EQ(together.status, 0) << together.err;
  EXPECT_NE(together.err.find("one data pass for all"), std::string::npos) << together.err;
  EXPECT_EQ(last_step("ab/0-mlp/metrics.jsonl"), 12) << "2 passes over 96 images in batches of 16";
  EXPECT_EQ(last_step("ab/1-mlp/metrics.jsonl"), 12);
  auto apart = run_colo(dir, "train " + a + " " + c + " --out " + dir.file("ac"));
  ASSERT_EQ(apart.status, 0) << apart.err;
  EXPECT_NE(apart.err.find("each over its own data"), std::string::npos) << apart.err;
  EXPECT_EQ(last_step("ac/0-mlp/metrics.jsonl"), 12);
  EXPECT_EQ(last_step("ac/1-mlp/metrics.jsonl"), 24) << "batches of 8";
}

// What a `colo train` on a shared producer did when the producer was killed.
struct RunWithProducerKilled {
  int exit_code = 0;
  std::string log;
  double ended_after_s = 0;  // since the run started
};

// Trains an MLP for `epochs` on `producer`'s batches, with `data_lines` added
// to its [data], and kills the producer once `epochs_before` epochs are
// written (or after 30 s).
RunWithProducerKilled train_and_kill_the_producer(const TempDir& dir, testing::SharedProducer& producer, int epochs,
                                                  const std::string& data_lines, size_t epochs_before) {
  std::string spec = dir.write(
      "spec.toml", "device = \"cpu\"\nepochs = " + std::to_string(epochs) +
                       "\nbatch_size = 16\ncheckpoint_every = 1\n[model]\nname = \"mlp\"\nwidths = [16]\n"
                       "[data]\nname = \"shared\"\nloader = \"" + producer.data_file() + "\"\n" + data_lines);
  ChildProcess train({COLO_EXECUTABLE, "train", spec, "--out", dir.file("out")}, {{"COLO_PROGRESS", "0"}},
                     dir.file("train.log"));
  Stopwatch waited;
  while (read_json_lines_if_any(dir.file("out/metrics.jsonl")) < epochs_before && waited.elapsed_s() < 30) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  producer.kill_now();
  RunWithProducerKilled run;
  run.exit_code = exit_code_of(train.wait());
  run.ended_after_s = waited.elapsed_s();
  run.log = read_file(dir.file("train.log"));
  return run;
}

TEST(ColoTrain, AProducerKilledMidRunEndsTrainingWithAClearErrorAndKeepsItsCheckpoints) {
  TempDir dir;
  testing::SharedProducer producer(dir, 64);
  RunWithProducerKilled run = train_and_kill_the_producer(dir, producer, 100000, "loader_timeout_s = 2\n", 2);
  EXPECT_NE(run.exit_code, 0) << run.log;
  EXPECT_NE(run.log.find("producer"), std::string::npos) << run.log;
  EXPECT_TRUE(path_exists(dir.file("out/checkpoint.pt"))) << "epochs finished before the loss stay saved";
  EXPECT_LT(run.ended_after_s, 60);
}

TEST(ColoTrain, AProducerKilledMidRunIsReplacedByLocalDecodingWhenTheSpecSaysSo) {
  TempDir dir;
  testing::SharedProducer producer(dir, 64);
  RunWithProducerKilled run = train_and_kill_the_producer(
      dir, producer, 200, "loader_timeout_s = 1\non_producer_lost = \"load_locally\"\n", 1);
  ASSERT_EQ(run.exit_code, 0) << run.log;
  EXPECT_NE(run.log.find("now loads its own batches from " + producer.data_file()), std::string::npos) << run.log;
  auto records = read_json_lines(dir.file("out/metrics.jsonl"));
  ASSERT_EQ(records.size(), 200u) << run.log;
  EXPECT_EQ(records.back()["step"].get<int64_t>(), 800) << "200 passes over 64 images in batches of 16";
  EXPECT_GT(records.back()["train_accuracy"].get<double>(), 0.0);
}

TEST(ColoTrain, ASharedDataSetNeedsItsLoaderAndAReadableDataFile) {
  TempDir dir;
  expect_rejected(dir, mlp_spec(dir.file("out"), "[data]\nname = \"shared\"\n"), "loader");
  expect_rejected(dir,
                  mlp_spec(dir.file("out"), "[data]\nname = \"shared\"\nloader = \"ipc:///tmp/x.sock\"\n"
                                            "on_producer_lost = \"load_locally\"\n"),
                  "on_producer_lost");
  std::string spec = dir.write(
      "spec.toml", mlp_spec(dir.file("out"), "[data]\nname = \"shared\"\nloader = \"" + dir.file("d.toml") + "\"\n"));
  auto run = run_colo(dir, "train " + spec);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("d.toml"), std::string::npos) << run.err;
}


}  // namespace
}  // namespace colo
