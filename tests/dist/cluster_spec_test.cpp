#include "colo/dist/cluster_spec.h"
#include "colo/dist/strategy_registry.h"

#include <gtest/gtest.h>

#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::dist {
namespace {

const char* kBase = R"(
output = "out"
[model]
name = "mlp"
[data]
name = "synthetic"
shape = [8]
)";

std::string error_for(const testing::TempDir& dir, const std::string& extra) {
  std::string path = dir.write("cluster.toml", std::string(kBase) + extra);
  return testing::input_error_of([&] { parse_cluster_spec(path); });
}

TEST(ClusterSpec, ReadsEveryTable) {
  testing::TempDir dir;
  std::string path = dir.write("cluster.toml", std::string(kBase) + R"(
[cluster]
workers = 4
servers = 2
strategy = "param_server"
rendezvous = "tcp://10.0.0.1:29500"
[param_server]
mode = "ssp"
staleness = 3
transport = "zmq"
[switch]
rule = "sync-switch"
fraction = 0.05
straggler_steps = 7
[simulate]
compute_ms_per_sample = 0.1
[[simulate.worker]]
speed = 0.33
[[simulate.worker]]
bandwidth_gbps = 100
)");
  ClusterSpec spec = parse_cluster_spec(path);
  EXPECT_EQ(spec.workers, 4);
  EXPECT_EQ(spec.world(), 6);
  EXPECT_EQ(spec.param_server.mode, "ssp");
  EXPECT_EQ(spec.param_server.staleness, 3);
  EXPECT_EQ(spec.param_server.transport, "zmq");
  EXPECT_EQ(spec.switch_rule.name, "sync-switch");
  EXPECT_DOUBLE_EQ(spec.switch_rule.fraction, 0.05);
  EXPECT_EQ(spec.switch_rule.straggler_steps, 7);
  ASSERT_EQ(spec.simulate.workers.size(), 2u);
  EXPECT_DOUBLE_EQ(spec.simulate.workers[0].speed, 0.33);
  EXPECT_DOUBLE_EQ(spec.simulate.workers[1].bandwidth_gbps, 100);
}

TEST(ClusterSpec, AllreduceNeedsNoServersAndSwitchIsAsync) {
  testing::TempDir dir;
  ClusterSpec allreduce = parse_cluster_spec(dir.write("a.toml", std::string(kBase) + "[cluster]\nworkers = 3\n"));
  EXPECT_EQ(allreduce.world(), 3);
  EXPECT_EQ(allreduce.simulate.workers.size(), 3u);
  ClusterSpec sw = parse_cluster_spec(dir.write("s.toml", std::string(kBase) +
                                                          "[cluster]\nstrategy = \"switch\"\n"
                                                          "[param_server]\nmode = \"sync\"\n"));
  EXPECT_EQ(sw.servers, 1);
  EXPECT_EQ(sw.param_server.mode, "async");
}

TEST(ClusterSpec, RejectsBadFilesNamingTheField) {
  testing::TempDir dir;
  EXPECT_NE(error_for(dir, "").find("[cluster]"), std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\nstrategy = \"gossip\"\n").find("cluster.strategy"), std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\nworkers = 0\n").find("cluster.workers"), std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\nstrategy = \"param_server\"\nservers = 0\n").find("at least 1 server"),
            std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\nrendezvous = \"10.0.0.1:29500\"\n").find("cluster.rendezvous"),
            std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\nworkrs = 2\n").find("cluster.workrs"), std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\n[allreduce]\ntopk = 0.01\ncompression = \"bf16\"\n").find("allreduce.topk"),
            std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\n[param_server]\nmode = \"eventual\"\n").find("param_server.mode"),
            std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\n[switch]\nrule = \"coin\"\n").find("switch.rule"), std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\n[param_server]\ntransport = \"rdma\"\n").find("param_server.transport"),
            std::string::npos);
  EXPECT_NE(error_for(dir, "[cluster]\n[simulate]\nstrategies = [\"ring\"]\n").find("simulate.strategies"),
            std::string::npos);
  EXPECT_EQ(parse_cluster_spec(dir.write("c.toml", std::string(kBase) + "[cluster]\nstrategy = \"switch\"\n"
                                                                          "checkpoint_steps = 10\n"))
                .checkpoint_steps,
            10);
  testing::TempDir empty;
  EXPECT_NE(testing::input_error_of([&] { parse_cluster_spec(empty.file("missing.toml")); }).find("missing.toml"),
            std::string::npos);
}

TEST(ClusterSpec, RejoiningAServerNeedsCheckpointsAndAnAsynchronousMode) {
  testing::TempDir dir;
  const std::string ps = "[cluster]\nstrategy = \"param_server\"\n";
  ClusterSpec spec = parse_cluster_spec(dir.write(
      "ok.toml", std::string(kBase) + ps + "checkpoint_steps = 5\n[param_server]\nmode = \"ssp\"\nrejoin_s = 20\n"));
  EXPECT_DOUBLE_EQ(spec.param_server.rejoin_s, 20);
  ClusterSpec switching = parse_cluster_spec(dir.write(
      "switch.toml", std::string(kBase) + "[cluster]\nstrategy = \"switch\"\ncheckpoint_steps = 5\n"
                                         "[param_server]\nmode = \"sync\"\nrejoin_s = 20\n"));
  EXPECT_EQ(switching.param_server.mode, "async");  // a switch goes to async whatever the file says
  std::string sync = error_for(dir, ps + "checkpoint_steps = 5\n[param_server]\nmode = \"sync\"\nrejoin_s = 20\n");
  EXPECT_NE(sync.find("param_server.rejoin_s"), std::string::npos) << sync;
  EXPECT_NE(sync.find("--resume"), std::string::npos) << sync;
  std::string unsaved = error_for(dir, ps + "[param_server]\nrejoin_s = 20\n");
  EXPECT_NE(unsaved.find("param_server.rejoin_s"), std::string::npos) << unsaved;
  EXPECT_NE(unsaved.find("checkpoint_steps"), std::string::npos) << unsaved;
}

TEST(ClusterSpec, MomentumCompensationOnlyWhenAsynchronous) {
  train::OptimizerSpec sgd;
  sgd.momentum = 0.9;
  ParamServerOptions options;
  options.mode = "async";
  EXPECT_NEAR(server_optimizer(sgd, options, 2).momentum, 0.4, 1e-12);
  EXPECT_NEAR(server_optimizer(sgd, options, 4).momentum, 0.15, 1e-12);
  EXPECT_EQ(server_optimizer(sgd, options, 16).momentum, 0.0);
  options.mode = "sync";
  EXPECT_EQ(server_optimizer(sgd, options, 4).momentum, 0.9);
  options.mode = "async";
  options.momentum_compensation = false;
  EXPECT_EQ(server_optimizer(sgd, options, 4).momentum, 0.9);
  options.momentum_compensation = true;
  options.overlap = true;  // two updates in flight per worker
  EXPECT_NEAR(server_optimizer(sgd, options, 2).momentum, 0.15, 1e-12);
}

TEST(ClusterSpec, CompressionIsNoneBf16OrInt8AndOverlapNeedsAsyncAndStalenessLrAStaleMode) {
  testing::TempDir dir;
  const std::string ps = "[cluster]\nstrategy = \"param_server\"\n";
  ClusterSpec spec = parse_cluster_spec(dir.write(
      "ok.toml", std::string(kBase) + ps + "[param_server]\ncompression = \"bf16\"\noverlap = true\n"));
  EXPECT_EQ(spec.param_server.compression, "bf16");
  EXPECT_TRUE(spec.param_server.overlap);
  ClusterSpec plain = parse_cluster_spec(dir.write("plain.toml", std::string(kBase) + ps));
  EXPECT_EQ(plain.param_server.compression, "none");
  EXPECT_FALSE(plain.param_server.overlap);
  EXPECT_NE(error_for(dir, ps + "[param_server]\ncompression = \"fp8\"\n").find("param_server.compression"),
            std::string::npos);
  EXPECT_EQ(parse_cluster_spec(dir.write("int8.toml", std::string(kBase) + ps + "[param_server]\ncompression = \"int8\"\n"))
                .param_server.compression,
            "int8");
  std::string sync = error_for(dir, ps + "[param_server]\nmode = \"sync\"\noverlap = true\n");
  EXPECT_NE(sync.find("param_server.overlap"), std::string::npos) << sync;
  EXPECT_NE(sync.find("async"), std::string::npos) << sync;
  EXPECT_TRUE(parse_cluster_spec(dir.write("sl.toml", std::string(kBase) + ps + "[param_server]\nmode = \"ssp\"\n"
                                                                               "staleness_lr = true\n"))
                  .param_server.staleness_lr);
  std::string never_stale = error_for(dir, ps + "[param_server]\nmode = \"sync\"\nstaleness_lr = true\n");
  EXPECT_NE(never_stale.find("param_server.staleness_lr"), std::string::npos) << never_stale;
}

TEST(ClusterSpec, MpsIsAutoOnOrOff) {
  testing::TempDir dir;
  const std::string ps = "[cluster]\nstrategy = \"param_server\"\n";
  EXPECT_EQ(parse_cluster_spec(dir.write("plain.toml", std::string(kBase) + ps)).param_server.mps, "auto");
  EXPECT_EQ(parse_cluster_spec(dir.write("off.toml", std::string(kBase) + ps + "[param_server]\nmps = \"off\"\n"))
                .param_server.mps,
            "off");
  std::string bad = error_for(dir, ps + "[param_server]\nmps = \"yes\"\n");
  EXPECT_NE(bad.find("param_server.mps"), std::string::npos) << bad;
}

TEST(StrategyRegistry, NamesEveryStrategyOnceAndRefusesAnUnknownOne) {
  EXPECT_EQ(strategy_names(), (std::vector<std::string>{"allreduce", "param_server", "switch"}));
  EXPECT_FALSE(strategy_info("allreduce").uses_servers);
  EXPECT_TRUE(strategy_info("param_server").uses_servers);
  EXPECT_TRUE(strategy_info("switch").uses_servers);
  try {
    strategy_info("gossip");
    FAIL() << "an unknown name must not fall back to a strategy";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce, param_server, switch"), std::string::npos) << e.what();
  }
  testing::TempDir dir;
  std::string message = error_for(dir, "[cluster]\nstrategy = \"gossip\"\n");
  EXPECT_NE(message.find("allreduce"), std::string::npos) << "the file error lists the known names: " << message;
}

}  // namespace
}  // namespace colo::dist
