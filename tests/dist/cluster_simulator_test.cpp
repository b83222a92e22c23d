#include "colo/dist/cluster_simulator.h"

#include <gtest/gtest.h>

#include "colo/core/paths.h"
#include "colo/dist/link_model.h"
#include "support/input_error.h"
#include "support/temp_dir.h"

namespace colo::dist {
namespace {

TEST(LinkModel, AlphaBetaCosts) {
  // 1 MB over 8 Gbit/s (1 GB/s) with 50 us latency: 1.05 ms.
  EXPECT_NEAR(transfer_s(1e6, 8, 50), 1.05e-3, 1e-12);
  std::vector<SimulatedWorker> ring{{1, 8, 0}, {1, 4, 10}, {1, 8, 0}, {1, 8, 0}};
  // 2 (W-1) rounds of bytes/W over the slowest link (4 Gbit/s) with the worst latency.
  EXPECT_NEAR(ring_allreduce_s(4e6, ring), 6 * (10e-6 + 1e6 * 8 / 4e9), 1e-12);
  SimulationSpec sim;
  sim.workers = ring;
  sim.server_bandwidth_gbps = 8;
  sim.server_latency_us = 0;
  // Two servers each carry half; four workers' shares: 4 * 2 MB at 1 GB/s = 8 ms,
  // longer than the slowest worker link (4 MB at 0.5 GB/s = 8 ms + 10 us).
  EXPECT_NEAR(sync_ps_exchange_s(4e6, sim, 2), 2 * (8e-3 + 10e-6), 1e-12);
  EXPECT_NEAR(server_transfer_s(4e6, sim, 2), 2e-3, 1e-12);
}

// Two workers (10 and 20 ms of compute per batch), 1 ms per 1 MB transfer,
// one server; `extra` goes into [simulate].
std::string two_worker_cluster(testing::TempDir& dir, const std::string& extra = "",
                               const std::string& strategies = R"(["allreduce", "ps-async"])") {
  return dir.write("cluster.toml", R"(
output = ")" + dir.file("out") + R"("
batch_size = 10
[model]
name = "mlp"
widths = [8]
[data]
name = "synthetic"
shape = [4]
train_size = 200
test_size = 20
[cluster]
workers = 2
servers = 1
strategy = "param_server"
[simulate]
compute_ms_per_sample = 1.0
model_mb = 1.0
server_bandwidth_gbps = 8
server_latency_us = 0
max_time_s = 0.05
eval_every_s = 0.01
strategies = )" + strategies + "\n" + extra + R"(
[[simulate.worker]]
speed = 1.0
bandwidth_gbps = 8
latency_us = 0
[[simulate.worker]]
speed = 0.5
bandwidth_gbps = 8
latency_us = 0
)");
}

// The timing of two_worker_cluster's all-reduce and async runs, worked out by hand.
void expect_the_hand_computed_schedule(const std::vector<SimulatedRun>& runs) {
  ASSERT_EQ(runs.size(), 2u);
  // All-reduce: 20 ms (slowest worker) + 2 rounds of 0.5 MB at 1 GB/s = 21 ms a step;
  // steps end at 21 and 42 ms within the 50 ms budget.
  EXPECT_NEAR(runs[0].step_s, 0.021, 1e-12);
  EXPECT_EQ(runs[0].updates, 2);
  EXPECT_EQ(runs[0].samples, 2 * 2 * 10);
  // Async: a push arrives after compute + 1 ms upload, the server takes
  // 2 ms (in and out), the reply 1 ms. Updates land at 13 (w0), 23 (w1),
  // 27 (w0), 41 (w0) and 47 ms (w1); w0's next would land at 55 ms, past the budget.
  // Staleness (updates between pull and push): 0, 1, 1, 0, 2.
  EXPECT_EQ(runs[1].updates, 5);
  EXPECT_NEAR(runs[1].mean_staleness, 0.8, 1e-12);
}

TEST(ClusterSimulator, ReproducesAHandComputedSchedule) {
  testing::TempDir dir;
  auto runs = simulate_cluster(parse_cluster_spec(two_worker_cluster(dir)));
  expect_the_hand_computed_schedule(runs);
  ASSERT_EQ(runs.size(), 2u);
  // Evaluations at 0, 10, ..., 50 ms.
  EXPECT_EQ(runs[1].evaluations.size(), 6u);
}

TEST(ClusterSimulator, TimeOnlyGivesTheSameScheduleWithoutTrainingOrAccuracy) {
  testing::TempDir dir;
  auto runs = simulate_cluster(parse_cluster_spec(two_worker_cluster(dir, "train = false")));
  expect_the_hand_computed_schedule(runs);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[1].evaluations.empty()) << "nothing trained: nothing to evaluate";

  testing::TempDir other;
  std::string path = two_worker_cluster(other, "train = false", R"(["allreduce", "switch"])");
  EXPECT_NE(testing::input_error_of([&] { parse_cluster_spec(path); }).find("switch needs train = true"),
            std::string::npos);
}

// Real workers stop after their shard's steps: with two steps each, the
// fast one ends after its push at 27 ms and the slow one's second push
// lands at 47 ms (45 ms of arrival, the server free) with nothing pushed
// between its pull at 24 ms and then but job 0's update at 27 ms.
TEST(ClusterSimulator, WorkersStopAfterTheirStepsAndTheSlowOneFinishesAlone) {
  testing::TempDir dir;
  auto runs = simulate_cluster(parse_cluster_spec(two_worker_cluster(dir, "train = false\nsteps_per_worker = 2")));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].updates, 2);
  EXPECT_NEAR(runs[0].simulated_s, 0.042, 1e-9) << "two lockstep steps of 21 ms";
  // Updates at 13 (w0), 23 (w1), 27 (w0), 47 ms (w1); staleness 0, 1, 1, 1.
  EXPECT_EQ(runs[1].updates, 4);
  EXPECT_NEAR(runs[1].mean_staleness, 0.75, 1e-12);
  EXPECT_NEAR(runs[1].simulated_s, 0.047, 1e-9);

  testing::TempDir one;
  auto single = simulate_cluster(parse_cluster_spec(two_worker_cluster(one, "train = false\nsteps_per_worker = 1")));
  ASSERT_EQ(single.size(), 2u);
  EXPECT_EQ(single[1].updates, 2);
  EXPECT_NEAR(single[1].mean_staleness, 0.5, 1e-12) << "w0 at 13 ms (0), w1 at 23 ms (1)";
}

// With overlap a worker sends each push and computes on: w0 sends at 10,
// 20, 30, 40 ms, w1 at 20 and 40 (each send waits for its step and the
// reply to its last push, which is back 1 ms after the server's 2 ms).
// Updates land at 13 (w0), 23 (w0), 25 (w1), 33 (w0), 43 (w0), 45 ms (w1):
// six against five without overlap. Each gradient is computed on the reply
// before the last: staleness 0, 1, 2, 2, 2, 5 (w1's second push still on
// the first parameters).
TEST(ClusterSimulator, OverlapSendsWithoutWaitingAndComputesOnTheReplyBeforeTheLast) {
  testing::TempDir dir;
  std::string path = two_worker_cluster(dir, "train = false", R"(["ps-async"])");
  std::string text = read_file(path);
  text.replace(text.find("[simulate]"), 10, "[param_server]\noverlap = true\n[simulate]");
  auto runs = simulate_cluster(parse_cluster_spec(dir.write("overlap.toml", text)));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].updates, 6);
  EXPECT_NEAR(runs[0].mean_staleness, 2.0, 1e-12);
  // Training on the simulated schedule: the same timing, and evaluations.
  text.replace(text.find("train = false"), 13, "");
  auto trained = simulate_cluster(parse_cluster_spec(dir.write("trained.toml", text)));
  ASSERT_EQ(trained.size(), 1u);
  EXPECT_EQ(trained[0].updates, 6);
  EXPECT_NEAR(trained[0].mean_staleness, 2.0, 1e-12);
  EXPECT_FALSE(trained[0].evaluations.empty());
}

}  // namespace
}  // namespace colo::dist
