#include "colo/slurm/gres.h"

#include <gtest/gtest.h>

#include "support/bytes.h"

namespace colo::slurm {
namespace {

using testing::kGiB;

TEST(Shards, RoundUpAndNeverZero) {
  EXPECT_EQ(shards_for(36 * kGiB, kGiB), 36);
  EXPECT_EQ(shards_for(36 * kGiB + 1, kGiB), 37);
  EXPECT_EQ(shards_for(0, kGiB), 1);
  EXPECT_THROW(shards_for(kGiB, 0), std::invalid_argument);
}

TEST(Conf, GresLinesListEveryGpuAndTheNodesShards) {
  NodeGpus node{"n1", {"/dev/nvidia0", "/dev/nvidia1"}, 80 * kGiB, 32, 0, ""};
  EXPECT_EQ(gres_conf(node, kGiB),
            "NodeName=n1 Name=gpu File=/dev/nvidia0\nNodeName=n1 Name=gpu File=/dev/nvidia1\n"
            "NodeName=n1 Name=shard Count=160\n");
  std::string conf = slurm_conf_lines(node, 2 * kGiB);
  EXPECT_NE(conf.find("GresTypes=gpu,shard\n"), std::string::npos);
  EXPECT_NE(conf.find("SelectType=select/cons_tres\n"), std::string::npos);
  EXPECT_NE(conf.find("NodeName=n1 CPUs=32 Gres=gpu:2,shard:80 State=UNKNOWN\n"), std::string::npos);
}

TEST(Conf, ANodeWithoutGpusOrMemoryIsRefused) {
  EXPECT_THROW(gres_conf({"n1", {}, 80 * kGiB, 0, 0, ""}, kGiB), std::invalid_argument);
  EXPECT_THROW(gres_conf({"n1", {"/dev/nvidia0"}, 0, 0, 0, ""}, kGiB), std::invalid_argument);
}

TEST(Sinfo, ShardsPerGpuIsTheSmallestOverNodeGroups) {
  EXPECT_EQ(shards_per_gpu_from_sinfo("gpu:2,shard:160\ngpu:h100:4(S:0-1),shard:320(S:0-1)\n"), 80);
  EXPECT_EQ(shards_per_gpu_from_sinfo("gpu:2,shard:160\ngpu:1,shard:40\n"), 40);
  EXPECT_EQ(shards_per_gpu_from_sinfo("(null)\ngpu:2\n"), 0);
}

}  // namespace
}  // namespace colo::slurm
