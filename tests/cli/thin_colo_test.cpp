// The thin `colo` runs the commands that need no LibTorch itself and hands
// the others to colo-torch beside it (src/colo/cli/main.cpp).

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cli/colo_process.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo {
namespace {

using testing::TempDir;

// Runs `program args` with its output captured in `dir`.
testing::ColoRun run_program(const TempDir& dir, const std::string& program, const std::string& args) {
  std::string out = dir.file("out.txt"), err = dir.file("err.txt");
  int raw = std::system((program + " " + args + " >" + out + " 2>" + err).c_str());
  testing::ColoRun run;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.out = read_file(out);
  run.err = read_file(err);
  return run;
}

TEST(ThinColo, RunsTheQuickCommandsWithoutColoTorchAndNamesItForTheOthers) {
  TempDir dir;
  std::string alone = dir.file("bin/colo");
  ASSERT_EQ(std::system(("mkdir -p " + dir.file("bin") + " && cp " + COLO_EXECUTABLE + " " + alone).c_str()), 0);
  std::string store = dir.file("jobs.db");
  // A store with one job, written by the whole colo.
  auto submitted = testing::run_colo(dir, "submit --store " + store + " --mem 1GiB -- true");
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  for (const std::string& quick : {"queue --store " + store, "show --store " + store + " 1",
                                   "cancel --store " + store + " 1", "logs --store " + store + " 1",
                                   "history --store " + store, std::string("gpus")}) {
    auto run = run_program(dir, alone, quick);
    EXPECT_EQ(run.status, 0) << quick << ": " << run.err;
  }
  auto shown = run_program(dir, alone, "show --store " + store + " 1");
  EXPECT_NE(shown.out.find("\"CANCELLED\""), std::string::npos) << "cancelled by the lone colo: " << shown.out;
  auto train = run_program(dir, alone, "train " + std::string(COLO_SOURCE_DIR) + "/examples/quickstart.toml");
  EXPECT_EQ(train.status, 1);
  EXPECT_NE(train.err.find(dir.file("bin/colo-torch")), std::string::npos) << train.err;
  auto bad = run_program(dir, alone, "show --store " + store + " x");
  EXPECT_EQ(bad.status, 2) << "bad input is exit status 2 here too: " << bad.err;
  // The shared loader runs here too, but for what needs LibTorch: a ring
  // kept on a GPU, or a registered data set's images.
  auto no_loader = run_program(dir, alone, "loader status ipc://" + dir.file("none.sock") + " --timeout 0.2");
  EXPECT_EQ(no_loader.status, 1);
  EXPECT_NE(no_loader.err.find("no loader answered at ipc://" + dir.file("none.sock")), std::string::npos)
      << no_loader.err;
  auto images = run_program(dir, alone, "loader write-images --source synthetic --limit 12 --size 16 --out " +
                                            dir.file("images"));
  EXPECT_EQ(images.status, 0) << images.err;
  EXPECT_NE(images.out.find("\"images\":12"), std::string::npos) << images.out;
  auto fashion = run_program(dir, alone, "loader write-images --limit 12 --out " + dir.file("fashion"));
  EXPECT_EQ(fashion.status, 1);
  EXPECT_NE(fashion.err.find(dir.file("bin/colo-torch")), std::string::npos) << fashion.err;
  write_file_atomically(dir.file("gpu.toml"), "root = \"" + dir.file("images") + "\"\nsize = 16\ndevice = \"cuda:0\"\n"
                                   "address = \"ipc://" + dir.file("gpu.sock") + "\"\n");
  auto on_gpu = run_program(dir, alone, "loader serve " + dir.file("gpu.toml"));
  EXPECT_EQ(on_gpu.status, 1);
  EXPECT_NE(on_gpu.err.find(dir.file("bin/colo-torch")), std::string::npos) << on_gpu.err;
}

TEST(ThinColo, HandsEveryOtherCommandLineToColoTorchWithItsExitStatus) {
  TempDir dir;
  auto help = testing::run_colo(dir, "--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("train"), std::string::npos) << "colo-torch's help lists every command: " << help.out;
  auto bad = testing::run_colo(dir, "train /no/such/spec.toml");
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("/no/such/spec.toml"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace colo
