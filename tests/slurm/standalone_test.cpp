#include "colo/slurm/standalone.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "support/bytes.h"
#include "support/temp_dir.h"

namespace colo::slurm {
namespace {

using testing::kGiB;

NodeGpus two_gpus(const std::string& missing_dir) {
  return {"n1", {missing_dir + "/no-such-gpu0", missing_dir + "/no-such-gpu1"}, 80 * kGiB, 16, 0, ""};
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Standalone, WritesAWholeOneNodeSetUpWithStandInsForMissingGpus) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("slurm");
  StandaloneSetup setup = plan_standalone(dir, two_gpus(tmp.path()), kGiB, 7001, 7002);
  ASSERT_TRUE(write_standalone(setup));

  EXPECT_EQ(setup.stand_ins, (std::vector<std::string>{dir + "/dev/nvidia0", dir + "/dev/nvidia1"}));
  for (const auto& file : setup.stand_ins) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << file << " stands in for a GPU as a character device";
  }
  std::string gres = read_file(dir + "/gres.conf");
  EXPECT_EQ(gres, "NodeName=n1 Name=gpu File=" + dir + "/dev/nvidia0\nNodeName=n1 Name=gpu File=" + dir +
                      "/dev/nvidia1\nNodeName=n1 Name=shard Count=160\n");

  std::string conf = read_file(dir + "/slurm.conf");
  EXPECT_EQ(conf, standalone_slurm_conf(setup));
  for (const std::string& line : std::vector<std::string>
       {"SlurmctldHost=n1(127.0.0.1)", "SlurmctldPort=7001", "SlurmdPort=7002", "AuthType=auth/munge",
        "AuthInfo=socket=" + dir + "/munge/sock", "StateSaveLocation=" + dir + "/state",
        "SlurmdSpoolDir=" + dir + "/spool", "SlurmctldLogFile=" + dir + "/log/slurmctld.log",
        "GresTypes=gpu,shard", "SelectType=select/cons_tres",
        "NodeName=n1 NodeAddr=127.0.0.1 CPUs=16 Gres=gpu:2,shard:160 State=UNKNOWN",
        "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP"}) {
    EXPECT_TRUE(has_line(conf, line)) << line << " in:\n" << conf;
  }
  for (const char* sub : {"/state", "/spool", "/log", "/munge"}) EXPECT_TRUE(is_directory(dir + sub)) << sub;

  struct stat key {};
  ASSERT_EQ(::stat((dir + "/munge/munge.key").c_str(), &key), 0);
  EXPECT_EQ(key.st_size, 128);
  EXPECT_EQ(key.st_mode & 0777, 0600u) << "munged refuses a key others can read";

  auto commands = standalone_start_commands(setup);
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0], "munged --force --socket=" + dir + "/munge/sock --key-file=" + dir + "/munge/munge.key --pid-file=" +
                             dir + "/munge/pid --log-file=" + dir + "/munge/log --seed-file=" + dir + "/munge/seed");
  EXPECT_EQ(commands[1], "SLURM_CONF=" + dir + "/slurm.conf slurmctld -i && SLURM_CONF=" + dir +
                             "/slurm.conf slurmd -N n1");
}

TEST(Standalone, ADeviceFileThatExistsIsUsedAsItIs) {
  testing::TempDir tmp;
  NodeGpus node = two_gpus(tmp.path());
  node.device_files[0] = "/dev/null";
  StandaloneSetup setup = plan_standalone(tmp.file("slurm"), node, kGiB, 7001, 7002);
  EXPECT_EQ(setup.node.device_files[0], "/dev/null");
  EXPECT_EQ(setup.stand_ins, std::vector<std::string>{tmp.file("slurm") + "/dev/nvidia1"});
}

TEST(Standalone, TheSameSetUpAgainWritesNothingAndKeepsItsKey) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("slurm");
  ASSERT_TRUE(write_standalone(plan_standalone(dir, two_gpus(tmp.path()), kGiB, 7001, 7002)));
  std::string key = read_file(dir + "/munge/munge.key");
  EXPECT_FALSE(write_standalone(plan_standalone(dir + "/", two_gpus(tmp.path()), kGiB, 7003, 7004)))
      << "other free ports, the same cluster";
  EXPECT_EQ(read_file(dir + "/munge/munge.key"), key);
  EXPECT_TRUE(has_line(read_file(dir + "/slurm.conf"), "SlurmctldPort=7001"));
}

// The message of the InputError `write` throws; "" when it throws none.
template <typename F>
std::string refusal(F write) {
  try {
    write();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Standalone, ADirectoryHoldingAnotherSetUpOrOtherFilesIsRefusedUntouched) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("slurm");
  ASSERT_TRUE(write_standalone(plan_standalone(dir, two_gpus(tmp.path()), kGiB, 7001, 7002)));
  std::string conf = read_file(dir + "/slurm.conf");
  NodeGpus bigger = two_gpus(tmp.path());
  bigger.gpu_mem_bytes = 40 * kGiB;
  std::string message = refusal([&] { write_standalone(plan_standalone(dir, bigger, kGiB, 7001, 7002)); });
  EXPECT_NE(message.find(dir + ": holds another colo Slurm set-up (node=n1 gpus=2 gpu_mem_bytes=85899345920"),
            std::string::npos)
      << message;
  EXPECT_EQ(read_file(dir + "/slurm.conf"), conf);

  make_directories(tmp.file("other"));
  tmp.write("other/notes.txt", "mine");
  message = refusal([&] { write_standalone(plan_standalone(tmp.file("other"), bigger, kGiB, 7001, 7002)); });
  EXPECT_NE(message.find("is not empty and holds no colo Slurm set-up"), std::string::npos) << message;
  EXPECT_EQ(list_directory(tmp.file("other")), std::vector<std::string>{"notes.txt"});
}

TEST(Standalone, ADirectoryThatCannotBeWrittenIsRefusedWithTheReason) {
  testing::TempDir tmp;
  tmp.write("a-file", "x");
  std::string message =
      refusal([&] { write_standalone(plan_standalone(tmp.file("a-file/slurm"), two_gpus(tmp.path()), kGiB, 1, 2)); });
  EXPECT_NE(message.find(tmp.file("a-file/slurm") + ": a directory colo can create ("), std::string::npos) << message;
  message = refusal([&] { write_standalone(plan_standalone(tmp.file("a-file"), two_gpus(tmp.path()), kGiB, 1, 2)); });
  EXPECT_NE(message.find("not an existing file"), std::string::npos) << message;
  message = refusal([&] { plan_standalone(tmp.file("my slurm"), two_gpus(tmp.path()), kGiB, 1, 2); });
  EXPECT_NE(message.find("no spaces"), std::string::npos) << message;
}

}  // namespace
}  // namespace colo::slurm
