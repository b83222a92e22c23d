// `colo slurm conf --standalone DIR`, run as a real process: the files it
// writes and the commands it prints (tests/slurm/real_slurm_test.sh starts them).

#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "cli/colo_process.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo {
namespace {

using testing::run_colo;
using testing::TempDir;

std::vector<std::string> command_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

TEST(ColoSlurmConf, StandaloneWritesAOneNodeSetUpAndPrintsTheTwoCommandsThatStartIt) {
  TempDir dir;
  const std::string slurm = dir.file("slurm");
  auto run = run_colo(dir, "slurm conf --standalone " + slurm + " --node n1 --gpus 2 --gpu-mem 8GiB --cpus 4 "
                           "--device-files " + dir.file("none/nvidia%d"));
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* file : {"/slurm.conf", "/gres.conf", "/munge/munge.key", "/dev/nvidia0", "/dev/nvidia1"}) {
    EXPECT_TRUE(path_exists(slurm + file)) << file;
  }
  std::string conf = read_file(slurm + "/slurm.conf");
  EXPECT_NE(conf.find("\nNodeName=n1 NodeAddr=127.0.0.1 CPUs=4 Gres=gpu:2,shard:16 State=UNKNOWN\n"),
            std::string::npos)
      << conf;
  EXPECT_NE(read_file(slurm + "/gres.conf").find("NodeName=n1 Name=gpu File=" + slurm + "/dev/nvidia1\n"),
            std::string::npos);
  auto commands = command_lines(run.out);
  ASSERT_EQ(commands.size(), 2u) << run.out;
  EXPECT_EQ(commands[0].rfind("munged --force --socket=" + slurm + "/munge/sock ", 0), 0u) << commands[0];
  EXPECT_EQ(commands[1], "SLURM_CONF=" + slurm + "/slurm.conf slurmctld -i && SLURM_CONF=" + slurm +
                             "/slurm.conf slurmd -N n1");
  EXPECT_NE(run.out.find("export SLURM_CONF=" + slurm + "/slurm.conf"), std::string::npos) << run.out;

  auto again = run_colo(dir, "slurm conf --standalone " + slurm + " --node n1 --gpus 2 --gpu-mem 8GiB --cpus 4 "
                             "--device-files " + dir.file("none/nvidia%d"));
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("already holds this set-up: nothing written"), std::string::npos) << again.out;
  EXPECT_EQ(command_lines(again.out), commands);

  auto other = run_colo(dir, "slurm conf --standalone " + slurm + " --node n1 --gpus 1 --gpu-mem 8GiB");
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find(slurm + ": holds another colo Slurm set-up"), std::string::npos) << other.err;
  EXPECT_EQ(read_file(slurm + "/slurm.conf"), conf) << "nothing changed";
}

}  // namespace
}  // namespace colo
