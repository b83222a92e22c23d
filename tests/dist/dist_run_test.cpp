// Multi-process `colo dist` runs on loopback (Gloo), checked against what
// the same training does in one process.

#include <netdb.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "cli/colo_process.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/subprocess.h"
#include "colo/core/tcp_port.h"
#include "colo/data/dataset_registry.h"
#include "colo/data/loader.h"
#include "colo/dist/cluster_spec.h"
#include "colo/dist/communicator.h"
#include "colo/dist/launcher.h"
#include "colo/dist/ps_transport.h"
#include "colo/models/model_registry.h"
#include "colo/train/loader_options.h"
#include "colo/train/optimizer.h"
#include "support/temp_dir.h"

namespace colo::dist {
namespace {

using testing::TempDir;

// A Fashion-MNIST MLP cluster file with `cluster` as its [cluster] table
// body and `extra` appended: `max_steps` steps, at most `epochs` epochs.
std::string cluster_file(const TempDir& dir, const std::string& name, const std::string& cluster,
                         const std::string& extra = "", const std::string& limits = "train_limit = 2048\n",
                         int64_t max_steps = 8, int64_t epochs = 2) {
  std::string text = "seed = 4\ndevice = \"cpu\"\noutput = \"" + dir.file(name) + "\"\nepochs = " +
                     std::to_string(epochs) + "\n" +
                     "max_steps = " + std::to_string(max_steps) + "\nbatch_size = 32\n" +
                     "[model]\nname = \"mlp\"\nwidths = [64, 32]\n"
                     "[data]\nname = \"fashion-mnist\"\nprefetch = 0\n" + limits +
                     "[optimizer]\nname = \"sgd\"\nlr = 0.1\nmomentum = 0.9\n"
                     "[cluster]\n" + cluster + extra;
  return dir.write(name + ".toml", text);
}

std::vector<float> read_floats(const std::string& path) {
  std::string bytes = read_file(path);
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

at::Tensor parameters_of(const TempDir& dir, const std::string& run, int rank) {
  auto values = read_floats(dir.file(run + "/params-rank" + std::to_string(rank) + ".f32"));
  return torch::tensor(values);
}

double relative_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

// CPU runs need Gloo, which the PyTorch wheel's LibTorch lacks headers for.
#define SKIP_WITHOUT_GLOO() \
  if (!gloo_available()) GTEST_SKIP() << "this build has no c10d Gloo"

testing::ColoRun run_dist(const TempDir& dir, const std::string& file) {
  return testing::run_colo(dir, "dist " + file, "OMP_NUM_THREADS=1");
}

// The same training in one process with the summed batch (2 x 32).
at::Tensor single_process_parameters(const std::string& file, int64_t workers) {
  ClusterSpec spec = parse_cluster_spec(file);
  data::Dataset dataset = data::load_dataset(spec.train.data);
  at::manual_seed(spec.train.seed);
  auto model = models::build_model(spec.train.model, dataset.shape);
  auto optimizer = train::make_optimizer(spec.train.optimizer, model->parameters());
  data::LoaderOptions options = train::loader_options(spec.train, dataset, at::kCPU, true);
  options.batch_size *= workers;
  options.drop_last = true;
  data::DataLoader loader(dataset.train, options);
  loader.start_epoch(0);
  for (int64_t step = 0; step < spec.train.max_steps; ++step) {
    auto batch = loader.next();
    optimizer->zero_grad();
    at::cross_entropy_loss(model->forward(batch->inputs), batch->labels).backward();
    optimizer->step();
  }
  std::vector<at::Tensor> flat;
  for (const auto& p : model->parameters()) flat.push_back(p.detach().reshape({-1}));
  return torch::cat(flat);
}

TEST(DistRun, AllreduceReplicasAreIdenticalAndEqualOneProcessWithTheSummedBatch) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  std::string file = cluster_file(dir, "ar", "workers = 2\n", "[allreduce]\nbucket_mib = 0.01\n");
  auto run = run_dist(dir, file);
  ASSERT_EQ(run.status, 0) << run.err;
  at::Tensor rank0 = parameters_of(dir, "ar", 0), rank1 = parameters_of(dir, "ar", 1);
  EXPECT_TRUE(rank0.equal(rank1)) << "replicas differ by " << relative_difference(rank1, rank0);
  at::Tensor reference = single_process_parameters(file, 2);
  ASSERT_EQ(reference.numel(), rank0.numel());
  EXPECT_LT(relative_difference(rank0, reference), 1e-5);
  // The run moved the parameters at all (the comparison is not vacuous).
  EXPECT_GT(relative_difference(single_process_parameters(cluster_file(dir, "none", "workers = 2\n", "", "train_limit = 2048\n", 1), 2), reference), 1e-3);
  auto result = nlohmann::json::parse(read_file(dir.file("ar/result.json")));
  EXPECT_EQ(result["steps"], 8);
  EXPECT_GT(result["bytes_sent_per_step"].get<double>(), 0);
  EXPECT_EQ(read_json_lines(dir.file("ar/steps-rank1.jsonl")).size(), 8u);
}

TEST(DistRun, CompressedAllreduceKeepsReplicasIdentical) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  for (const std::string& codec : {std::string("compression = \"bf16\"\n"), std::string("topk = 0.05\n")}) {
    std::string name = codec[0] == 'c' ? "bf16" : "topk";
    auto run = run_dist(dir, cluster_file(dir, name, "workers = 3\n", "[allreduce]\nbucket_mib = 0.01\n" + codec));
    ASSERT_EQ(run.status, 0) << run.err;
    at::Tensor rank0 = parameters_of(dir, name, 0);
    EXPECT_TRUE(rank0.equal(parameters_of(dir, name, 1))) << name;
    EXPECT_TRUE(rank0.equal(parameters_of(dir, name, 2))) << name;
    auto steps = read_json_lines(dir.file(name + "/steps-rank0.jsonl"));
    EXPECT_LT(steps.back()["loss"].get<double>(), steps.front()["loss"].get<double>()) << name;
  }
}

TEST(DistRun, SynchronousParameterServerEqualsAllreduce) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  ASSERT_EQ(run_dist(dir, cluster_file(dir, "ar", "workers = 2\n")).status, 0);
  auto run = run_dist(dir, cluster_file(dir, "ps", "workers = 2\nstrategy = \"param_server\"\nservers = 2\n",
                                        "[param_server]\nmode = \"sync\"\n"));
  ASSERT_EQ(run.status, 0) << run.err;
  at::Tensor allreduce = parameters_of(dir, "ar", 0);
  EXPECT_LT(relative_difference(parameters_of(dir, "ps", 0), allreduce), 1e-5);
  EXPECT_LT(relative_difference(parameters_of(dir, "ps", 1), allreduce), 1e-5);
}

TEST(DistRun, AsyncParameterServerAndSwitchConvergeNearAllreduce) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  const std::string full = "";  // the whole of Fashion-MNIST, two epochs
  std::map<std::string, std::string> runs{
      {"allreduce", "workers = 2\n"},
      {"async", "workers = 2\nstrategy = \"param_server\"\nservers = 2\n"},
      {"switch", "workers = 2\nstrategy = \"switch\"\nservers = 2\n"},
      {"async-host", "workers = 2\nstrategy = \"param_server\"\nservers = 2\n"},
      {"async-int8", "workers = 2\nstrategy = \"param_server\"\nservers = 2\n"}};
  std::map<std::string, std::string> extras{
      {"switch", "[switch]\nmin_steps = 200\nwindow = 100\n"},
      // Through ZeroMQ as bfloat16, each reply taken a step late.
      {"async-host", "[param_server]\ntransport = \"zmq\"\ncompression = \"bf16\"\noverlap = true\n"},
      // Through ZeroMQ as 8-bit codes, the pushes with error feedback.
      {"async-int8", "[param_server]\ntransport = \"zmq\"\ncompression = \"int8\"\n"}};
  std::map<std::string, double> accuracy;
  for (const auto& [name, cluster] : runs) {
    std::string extra = extras.count(name) ? extras[name] : "";
    auto run = run_dist(dir, cluster_file(dir, name, cluster, extra, full, 0));
    ASSERT_EQ(run.status, 0) << name << ": " << run.err;
    auto result = nlohmann::json::parse(read_file(dir.file(name + "/result.json")));
    accuracy[name] = result["test_accuracy"].get<double>();
    if (name == "switch") {
      EXPECT_GT(result["switched_at_step"].get<int64_t>(), 0);
    }
    if (name == "async-host") {
      // Each step's exchange, by phase, within the exchange's time.
      auto steps = read_json_lines(dir.file(name + "/steps-rank0.jsonl"));
      ASSERT_FALSE(steps.empty());
      for (const auto& step : steps) {
        ASSERT_TRUE(step.contains("exchange_phases_s")) << step.dump();
        double phases = 0;
        for (const char* key : {"receive_s", "apply_s", "to_host_s", "send_s"}) {
          double seconds = step["exchange_phases_s"].at(key).get<double>();
          EXPECT_GE(seconds, 0) << key;
          phases += seconds;
        }
        EXPECT_LE(phases, step["communication_s"].get<double>() + step["waiting_s"].get<double>() + 1e-3)
            << step.dump();
      }
    }
  }
  EXPECT_GT(accuracy["allreduce"], 0.80);
  EXPECT_GE(accuracy["async"], accuracy["allreduce"] - 0.01);
  EXPECT_GE(accuracy["switch"], accuracy["allreduce"] - 0.01);
  EXPECT_GE(accuracy["async-host"], accuracy["allreduce"] - 0.01);
  EXPECT_GE(accuracy["async-int8"], accuracy["allreduce"] - 0.01);
}

// Starts `colo dist` on a run of `cluster` long enough never to end by
// itself (its output in `dir`/run, its terminal in `dir`/colo.log) and
// returns once worker 1 has trained a step, or after 60 s.
ChildProcess start_long_run(const TempDir& dir, const std::string& cluster) {
  std::string file = cluster_file(dir, "run", cluster, "", "train_limit = 2048\n", 1000000);
  ChildProcess colo({COLO_EXECUTABLE, "dist", file}, {{"OMP_NUM_THREADS", "1"}}, dir.file("colo.log"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string steps = dir.file("run/steps-rank1.jsonl");
  while (!(path_exists(steps) && file_size(steps) > 0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return colo;
}

// Expects every process of a run's processes.json to have ended within `within_s`.
void expect_all_gone(const nlohmann::json& processes, int within_s) {
  auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(within_s);
  for (const auto& p : processes) {
    pid_t pid = p["pid"].get<pid_t>();
    while (process_alive(pid) && std::chrono::steady_clock::now() < gone_by) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_FALSE(process_alive(pid)) << "still running: " << p.dump();
  }
}

// Starts a long run, kills rank `victim` (named `role`) once worker 1 is
// training, and expects the run to stop with a message naming it (not to hang).
void expect_killed_rank_fails_the_run(const std::string& cluster, int victim = 1,
                                      const std::string& role = "worker 1") {
  TempDir dir;
  ChildProcess colo = start_long_run(dir, cluster);
  ASSERT_TRUE(path_exists(dir.file("run/steps-rank1.jsonl"))) << read_file(dir.file("colo.log"));
  auto processes = nlohmann::json::parse(read_file(dir.file("run/processes.json")));
  pid_t worker = processes[victim]["pid"].get<pid_t>();
  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  auto killed_at = std::chrono::steady_clock::now();
  std::optional<int> status;
  while (!(status = colo.poll()) && std::chrono::steady_clock::now() - killed_at < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!status) colo.terminate(1.0);
  ASSERT_TRUE(status.has_value()) << "colo dist still running 30 s after " << role << " died";
  EXPECT_EQ(exit_code_of(*status), 1);
  std::string log = read_file(dir.file("colo.log"));
  EXPECT_NE(log.find("rank " + std::to_string(victim) + " (" + role + ", pid " + std::to_string(worker) +
                     ") was killed by signal 9"),
            std::string::npos) << log;
  // Nothing is left behind (a process may still be finishing its exit for a moment).
  expect_all_gone(processes, 5);
}

TEST(DistRun, KilledWorkerFailsAllreduceRunClearly) {
  SKIP_WITHOUT_GLOO();
  expect_killed_rank_fails_the_run("workers = 3\n");
}

TEST(DistRun, KilledWorkerFailsParameterServerRunClearly) {
  SKIP_WITHOUT_GLOO();
  expect_killed_rank_fails_the_run("workers = 2\nstrategy = \"param_server\"\nservers = 1\n");
}

TEST(DistRun, KilledServerFailsParameterServerRunClearly) {
  SKIP_WITHOUT_GLOO();
  expect_killed_rank_fails_the_run("workers = 2\nstrategy = \"param_server\"\nservers = 1\n", 2, "server 0");
}

// Several hosts, played on this one: one `colo dist` per rank as srun or
// torchrun start them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no
// launcher), rank r offering its peers the address `hosts[r]`
// (COLO_DIST_HOST; "" offers this host's name). Rank r's output goes to
// `dir`/rank<r>.log.
std::vector<ChildProcess> start_ranks_as_on_hosts(const TempDir& dir, const std::string& file,
                                                  const std::vector<std::string>& hosts,
                                                  const std::string& master_addr) {
  std::string port = std::to_string(free_tcp_port());
  std::vector<ChildProcess> ranks;
  for (size_t r = 0; r < hosts.size(); ++r) {
    EnvironmentOverrides env{{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(hosts.size())},
                             {"MASTER_ADDR", master_addr}, {"MASTER_PORT", port}, {"OMP_NUM_THREADS", "1"}};
    if (!hosts[r].empty()) env["COLO_DIST_HOST"] = hosts[r];
    ranks.emplace_back(std::vector<std::string>{COLO_EXECUTABLE, "dist", file}, env,
                       dir.file("rank" + std::to_string(r) + ".log"), /*end_with_parent=*/true);
  }
  return ranks;
}

// Each rank's wait status, or nullopt for one still running after `within_s`.
std::vector<std::optional<int>> wait_for_ranks(std::vector<ChildProcess>& ranks, double within_s) {
  std::vector<std::optional<int>> status(ranks.size());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(within_s * 1000));
  for (bool running = true; running && std::chrono::steady_clock::now() < deadline;) {
    running = false;
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (!status[r]) status[r] = ranks[r].poll();
      running = running || !status[r];
    }
    if (running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!status[r]) ranks[r].terminate(1.0);
  }
  return status;
}

bool host_name_resolves() {
  addrinfo* found = nullptr;
  std::string host = this_host_name();
  if (host.empty() || ::getaddrinfo(host.c_str(), nullptr, nullptr, &found) != 0) return false;
  ::freeaddrinfo(found);
  return true;
}

// Rank 0 and 3 offer this host's name (the path a run across hosts takes),
// ranks 1 and 2 loopback addresses of their own: every process reaches
// every other over TCP at the address it offered, and the synchronous
// parameter server trains what one process with the summed batch does.
TEST(DistRun, RanksStartedOnePerHostMeetOverTcpAndTrainAsOneProcessWould) {
  SKIP_WITHOUT_GLOO();
  if (!host_name_resolves()) GTEST_SKIP() << "this host's name does not resolve";
  TempDir dir;
  std::string file = cluster_file(dir, "run", "workers = 2\nstrategy = \"param_server\"\nservers = 2\n",
                                  "[param_server]\nmode = \"sync\"\ntransport = \"zmq\"\n");
  auto ranks = start_ranks_as_on_hosts(dir, file, {"", "127.0.0.2", "127.0.0.3", ""}, "localhost");
  auto status = wait_for_ranks(ranks, 120);
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_TRUE(status[r] && exit_code_of(*status[r]) == 0)
        << "rank " << r << ": " << read_file(dir.file("rank" + std::to_string(r) + ".log"));
  }
  std::string server0 = read_file(dir.file("rank2.log")), server1 = read_file(dir.file("rank3.log"));
  EXPECT_NE(server0.find("server 0: serving at tcp://127.0.0.3:"), std::string::npos) << server0;
  EXPECT_NE(server1.find("server 1: serving at tcp://" + this_host_name() + ":"), std::string::npos) << server1;
  at::Tensor rank0 = parameters_of(dir, "run", 0);
  EXPECT_TRUE(rank0.equal(parameters_of(dir, "run", 1)));
  at::Tensor reference = single_process_parameters(file, 2);
  EXPECT_LT(relative_difference(rank0, reference), 1e-5);
  EXPECT_GT(relative_difference(single_process_parameters(cluster_file(dir, "one", "workers = 2\n", "",
                                                                       "train_limit = 2048\n", 1), 2),
                                reference), 1e-3);
  EXPECT_EQ(nlohmann::json::parse(read_file(dir.file("run/result.json")))["steps"], 8);
}

// Ranks on three "hosts", a long asynchronous run; once worker 1 has
// trained a step, rank `victim` is killed. Returns the survivors' logs
// after checking that every one of them ended, failing, within 30 s.
std::map<size_t, std::string> kill_a_rank_without_launcher(size_t victim) {
  TempDir dir;
  std::string file = cluster_file(dir, "run", "workers = 2\nstrategy = \"param_server\"\nservers = 1\n", "",
                                  "train_limit = 2048\n", 1000000, 100000);
  auto ranks = start_ranks_as_on_hosts(dir, file, {"127.0.0.1", "127.0.0.2", "127.0.0.3"}, "127.0.0.1");
  std::string steps = dir.file("run/steps-rank1.jsonl");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto any_ended = [&] { return std::any_of(ranks.begin(), ranks.end(), [](ChildProcess& r) { return r.poll(); }); };
  while (!(path_exists(steps) && file_size(steps) > 0) && !any_ended() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::map<size_t, std::string> logs;
  EXPECT_TRUE(path_exists(steps)) << read_file(dir.file("rank0.log"));
  if (!path_exists(steps)) return logs;
  EXPECT_EQ(::kill(ranks[victim].pid(), SIGKILL), 0);
  auto status = wait_for_ranks(ranks, 30);
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (r == victim) continue;
    logs[r] = read_file(dir.file("rank" + std::to_string(r) + ".log"));
    EXPECT_TRUE(status[r].has_value()) << "rank " << r << " still running 30 s after rank " << victim << " died";
    if (status[r]) {
      EXPECT_EQ(exit_code_of(*status[r]), 1) << logs[r];
    }
  }
  return logs;
}

TEST(DistRun, WithoutALauncherAKilledServerEndsEveryWorkerWithin30sNamingIt) {
  SKIP_WITHOUT_GLOO();
  for (const auto& [rank, log] : kill_a_rank_without_launcher(2)) {
    EXPECT_NE(log.find("server 0 closed the connection"), std::string::npos) << "rank " << rank << ": " << log;
  }
}

TEST(DistRun, WithoutALauncherAKilledWorkerIsNamedByTheServerAndEndsTheRunWithin30s) {
  SKIP_WITHOUT_GLOO();
  auto logs = kill_a_rank_without_launcher(1);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_NE(logs[2].find("server 0: the connection of worker 1 closed before it was done"), std::string::npos)
      << logs[2];
  EXPECT_NE(logs[0].find("server 0 closed the connection"), std::string::npos) << logs[0];
}

int64_t committed_step(const TempDir& dir, const std::string& run);
std::vector<int64_t> steps_of(const std::string& path);
std::vector<int64_t> one_to(int64_t n);

// With rejoin_s, a server killed mid-run is started again by the launcher
// from the committed checkpoint; the workers wait for it, connect to its
// new address and train on: every step once, a trained model, exit 0.
TEST(DistRun, AKilledServerIsRestartedFromTheCheckpointAndRejoinedByTheWorkers) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  const int64_t steps = 600;
  std::string file = cluster_file(dir, "run",
                                  "workers = 2\nstrategy = \"param_server\"\nservers = 2\ncheckpoint_steps = 25\n",
                                  "[param_server]\nrejoin_s = 30\n", "train_limit = 2048\n", steps, 1000);
  ChildProcess colo({COLO_EXECUTABLE, "dist", file}, {{"OMP_NUM_THREADS", "1"}}, dir.file("colo.log"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto checkpointed = [&] {
    return path_exists(dir.file("run/checkpoint/latest.json")) && committed_step(dir, "run") >= 50;
  };
  while (!checkpointed() && !colo.poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(checkpointed()) << read_file(dir.file("colo.log"));
  auto processes = nlohmann::json::parse(read_file(dir.file("run/processes.json")));
  pid_t server = processes[3]["pid"].get<pid_t>();  // server 1: server 0 keeps its state
  ASSERT_EQ(::kill(server, SIGKILL), 0);
  auto killed_at = std::chrono::steady_clock::now();
  std::optional<int> status;
  while (!(status = colo.poll()) && std::chrono::steady_clock::now() - killed_at < std::chrono::seconds(90)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!status) colo.terminate(1.0);
  std::string log = read_file(dir.file("colo.log"));
  ASSERT_TRUE(status.has_value()) << "colo dist still running 90 s after server 1 died: " << log;
  ASSERT_EQ(exit_code_of(*status), 0) << log;
  EXPECT_NE(log.find("rank 3 (server 1, pid " + std::to_string(server) +
                     ") was killed by signal 9; restarting it from the checkpoint of step"),
            std::string::npos) << log;
  EXPECT_NE(log.find("worker 0: server 1 is back at tcp://127.0.0.1:"), std::string::npos) << log;
  std::string restarted = read_file(dir.file("run/rank3.log"));
  EXPECT_NE(restarted.find("server 1: restarted from the checkpoint of step"), std::string::npos) << restarted;
  EXPECT_NE(read_file(dir.file("run/rank1.log")).find("worker 1: server 1 is back"), std::string::npos);
  EXPECT_NE(nlohmann::json::parse(read_file(dir.file("run/processes.json")))[3]["pid"].get<pid_t>(), server);
  EXPECT_EQ(steps_of(dir.file("run/steps-rank0.jsonl")), one_to(steps));
  EXPECT_EQ(steps_of(dir.file("run/steps-rank1.jsonl")), one_to(steps));
  auto result = nlohmann::json::parse(read_file(dir.file("run/result.json")));
  EXPECT_EQ(result["steps"], steps);
  EXPECT_GT(result["test_accuracy"].get<double>(), 0.7);
}

TEST(DistRun, KillingTheLauncherEndsItsProcessesInsteadOfLeavingThemTraining) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  ChildProcess colo = start_long_run(dir, "workers = 2\n");
  ASSERT_TRUE(path_exists(dir.file("run/steps-rank1.jsonl"))) << read_file(dir.file("colo.log"));
  auto processes = nlohmann::json::parse(read_file(dir.file("run/processes.json")));
  ASSERT_EQ(::kill(colo.pid(), SIGKILL), 0);
  colo.wait();
  // A resumed run must not share its folder with the old run's workers.
  expect_all_gone(processes, 10);
}

TEST(DistRun, AStalledAllreducePeerEndsTheRunAfterTimeoutWithOneLineNotABacktrace) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  ChildProcess colo = start_long_run(dir, "workers = 2\ntimeout_s = 3\n");
  ASSERT_TRUE(path_exists(dir.file("run/steps-rank1.jsonl"))) << read_file(dir.file("colo.log"));
  auto processes = nlohmann::json::parse(read_file(dir.file("run/processes.json")));
  pid_t stalled = processes[1]["pid"].get<pid_t>();
  ASSERT_EQ(::kill(stalled, SIGSTOP), 0);
  auto stopped_at = std::chrono::steady_clock::now();
  std::optional<int> status;
  while (!(status = colo.poll()) && std::chrono::steady_clock::now() - stopped_at < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(stalled, SIGKILL);
  if (!status) colo.terminate(1.0);
  ASSERT_TRUE(status.has_value()) << "colo dist still running 30 s after worker 1 stalled";
  EXPECT_EQ(exit_code_of(*status), 1);
  std::string log = read_file(dir.file("colo.log"));
  EXPECT_NE(log.find("sent nothing for 3 s"), std::string::npos) << log;
  EXPECT_EQ(log.find("frame #"), std::string::npos) << "a C++ backtrace in the message: " << log;
}

TEST(DistRun, BadInputAWorkerFindsIsTheRunsBadInputExitStatus2) {
  TempDir dir;
  std::string file = cluster_file(dir, "run", "workers = 2\n", "", "path = \"" + dir.file("no-such-data") + "\"\n");
  auto run = run_dist(dir, file);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("no-such-data"), std::string::npos) << run.err;
}

TEST(DistRun, APeerThatFailsOfTheLostConnectionFirstDoesNotHideTheBadInputOfTheRankThatStopped) {
  // Rank 1 finds bad input and exits 2; rank 0, its connection gone, fails
  // first. The run is still bad input, named by rank 1's log.
  TempDir dir;
  ClusterSpec spec;
  spec.workers = 2;
  spec.train.output = dir.file("out");
  int code = launch_local(spec, {"/bin/sh", "-c",
                                 "if [ \"$COLO_DIST_RANK\" = 0 ]; then exit 1; fi; sleep 0.3; "
                                 "echo 'colo: error: no-such-data: not a data folder' >&2; exit 2"});
  EXPECT_EQ(code, 2);
}

// A switch run of `max_steps` that checkpoints every 25 steps and switches
// after step 60 whatever its length (the plateau rule with a window of 10,
// min_steps 60 and an improvement no loss reaches).
std::string checkpointed_switch_file(const TempDir& dir, const std::string& name, int64_t workers = 2,
                                     int64_t max_steps = 600) {
  std::string text = "seed = 4\ndevice = \"cpu\"\noutput = \"" + dir.file(name) + "\"\nepochs = 100\n"
                     "max_steps = " + std::to_string(max_steps) + "\nbatch_size = 32\n"
                     "[model]\nname = \"mlp\"\nwidths = [64, 32]\n"
                     "[data]\nname = \"fashion-mnist\"\nprefetch = 0\ntrain_limit = 2048\n"
                     "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.9\n"
                     "[cluster]\nworkers = " + std::to_string(workers) + "\nstrategy = \"switch\"\nservers = 1\n"
                     "checkpoint_steps = 25\neval_every = 40\n"
                     "[switch]\nrule = \"plateau\"\nmin_steps = 60\nwindow = 10\nmin_improvement = 1.0\n";
  return dir.write(name + ".toml", text);
}

// The "step" of every record, in file order.
std::vector<int64_t> steps_of(const std::string& path) {
  std::vector<int64_t> steps;
  for (const auto& r : read_json_lines(path)) steps.push_back(r["step"].get<int64_t>());
  return steps;
}

std::vector<int64_t> one_to(int64_t n) {
  std::vector<int64_t> all;
  for (int64_t i = 1; i <= n; ++i) all.push_back(i);
  return all;
}

int64_t committed_step(const TempDir& dir, const std::string& run) {
  return nlohmann::json::parse(read_file(dir.file(run + "/checkpoint/latest.json")))["step"].get<int64_t>();
}

TEST(DistRun, ACheckpointTakenBeforeTheSwitchResumesExactlyAndTheRunSwitchesAfterIt) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  ASSERT_EQ(run_dist(dir, checkpointed_switch_file(dir, "whole")).status, 0);
  auto whole = read_json_lines(dir.file("whole/steps-rank1.jsonl"));
  ASSERT_EQ(whole.size(), 600u);
  ASSERT_EQ(whole[59]["strategy"], "allreduce");
  ASSERT_EQ(whole[60]["strategy"], "ps-async");
  // Checkpoints went on after the switch: the last one is the run's end.
  EXPECT_EQ(committed_step(dir, "whole"), 600);

  // The same run stopped at step 50, before its switch, then trained on to 600.
  ASSERT_EQ(run_dist(dir, checkpointed_switch_file(dir, "part", 2, 50)).status, 0);
  EXPECT_EQ(committed_step(dir, "part"), 50);
  EXPECT_EQ(list_directory(dir.file("part/checkpoint")),
            (std::vector<std::string>{"latest.json", "rank0-step50.ckpt", "rank1-step50.ckpt"}));
  // The replicas' parameters and momentum are in worker 0's file alone.
  EXPECT_LT(file_size(dir.file("part/checkpoint/rank1-step50.ckpt")) * 10,
            file_size(dir.file("part/checkpoint/rank0-step50.ckpt")));
  auto resumed = run_dist(dir, checkpointed_switch_file(dir, "part", 2, 600) + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming at step 50"), std::string::npos) << resumed.err;
  auto part = read_json_lines(dir.file("part/steps-rank1.jsonl"));
  ASSERT_EQ(steps_of(dir.file("part/steps-rank1.jsonl")), one_to(600));
  // Steps 51-60 all-reduce on the parameters, momentum, data position and
  // rule history of step 50: the uninterrupted run's losses, bit for bit
  // (one thread, two workers). A lost momentum would change step 52 on.
  for (size_t i = 50; i < 60; ++i) {
    EXPECT_EQ(part[i]["strategy"], "allreduce") << i;
    EXPECT_DOUBLE_EQ(part[i]["loss"].get<double>(), whole[i]["loss"].get<double>()) << "step " << i + 1;
  }
  EXPECT_EQ(part[60]["strategy"], "ps-async");
  auto result = nlohmann::json::parse(read_file(dir.file("part/result.json")));
  EXPECT_EQ(result["steps"], 600);
  EXPECT_EQ(result["switched_at_step"], 60);
  EXPECT_EQ(result["resumed"], true);
  EXPECT_GT(result["test_accuracy"].get<double>(), 0.6);
  // Evaluations every 40 steps, at each epoch's end and at the end of the
  // first run (step 50): none repeated, none missing.
  std::vector<int64_t> evals = steps_of(dir.file("part/eval.jsonl"));
  std::vector<int64_t> expected;
  for (int64_t s = 1; s <= 600; ++s) {
    if (s % 40 == 0 || s % 32 == 0 || s == 50 || s == 600) expected.push_back(s);  // 32 global batches an epoch
  }
  EXPECT_EQ(evals, expected);
}

TEST(DistRun, ATopKAllreduceRunResumesWithItsResidualsExactly) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  std::string file = cluster_file(dir, "topk", "workers = 2\ncheckpoint_steps = 25\n",
                                  "[allreduce]\nbucket_mib = 0.01\ntopk = 0.05\n", "train_limit = 2048\n", 60);
  ASSERT_EQ(run_dist(dir, file).status, 0);
  auto before = read_json_lines(dir.file("topk/steps-rank0.jsonl"));
  auto resumed = run_dist(dir, file + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  auto after = read_json_lines(dir.file("topk/steps-rank0.jsonl"));
  ASSERT_EQ(steps_of(dir.file("topk/steps-rank0.jsonl")), one_to(60));
  // Every residual the workers carried at step 50 is back: a lost one would
  // change the sparse sums from step 51 on.
  for (size_t i = 50; i < 60; ++i) {
    EXPECT_DOUBLE_EQ(after[i]["loss"].get<double>(), before[i]["loss"].get<double>()) << "step " << i + 1;
  }
}

// Killed once a checkpoint after its switch was committed: the servers'
// parameters and momentum come back through worker 0 (kSnapshot), and the
// resumed run goes on with the parameter server, without switching again.
TEST(DistRun, ARunKilledAfterItsSwitchResumesFromACheckpointTakenFromItsServers) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  std::string file = checkpointed_switch_file(dir, "run");
  int64_t killed_after = 0;
  {
    ChildProcess colo({COLO_EXECUTABLE, "dist", file}, {{"OMP_NUM_THREADS", "1"}}, dir.file("colo.log"));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    auto after_switch = [&] {
      return path_exists(dir.file("run/checkpoint/latest.json")) && committed_step(dir, "run") >= 75;
    };
    while (!after_switch() && !colo.poll() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(after_switch()) << read_file(dir.file("colo.log"));
    // The whole host goes down: the launcher and every rank, at once.
    auto processes = nlohmann::json::parse(read_file(dir.file("run/processes.json")));
    colo.terminate(0.0);
    for (const auto& p : processes) ::kill(p["pid"].get<pid_t>(), SIGKILL);
    killed_after = committed_step(dir, "run");
  }
  ASSERT_FALSE(path_exists(dir.file("run/result.json")));
  auto resumed = run_dist(dir, file + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming at step " + std::to_string(killed_after)), std::string::npos) << resumed.err;
  EXPECT_EQ(resumed.err.find("switching to"), std::string::npos) << resumed.err;
  EXPECT_EQ(steps_of(dir.file("run/steps-rank0.jsonl")), one_to(600));
  EXPECT_EQ(steps_of(dir.file("run/steps-rank1.jsonl")), one_to(600));
  auto after = read_json_lines(dir.file("run/steps-rank0.jsonl"));
  EXPECT_EQ(after[static_cast<size_t>(killed_after)]["strategy"], "ps-async");
  auto result = nlohmann::json::parse(read_file(dir.file("run/result.json")));
  EXPECT_EQ(result["steps"], 600);
  EXPECT_EQ(result["switched_at_step"], 60);
  EXPECT_GT(result["test_accuracy"].get<double>(), 0.6);
}

// Synchronous parameter server: the servers' parameters and momentum at the
// checkpoint, fetched by worker 0, make the resumed steps the uninterrupted
// run's (the servers sum two workers' pushes in either order exactly).
TEST(DistRun, ASynchronousParameterServerRunResumesExactlyFromItsServersState) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  std::string file = cluster_file(dir, "ps",
                                  "workers = 2\nstrategy = \"param_server\"\nservers = 2\ncheckpoint_steps = 25\n",
                                  "[param_server]\nmode = \"sync\"\n", "train_limit = 2048\n", 60);
  ASSERT_EQ(run_dist(dir, file).status, 0);
  auto before = read_json_lines(dir.file("ps/steps-rank1.jsonl"));
  EXPECT_EQ(committed_step(dir, "ps"), 50);
  auto resumed = run_dist(dir, file + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  auto after = read_json_lines(dir.file("ps/steps-rank1.jsonl"));
  ASSERT_EQ(steps_of(dir.file("ps/steps-rank1.jsonl")), one_to(60));
  for (size_t i = 50; i < 60; ++i) {
    EXPECT_EQ(after[i]["strategy"], "ps-sync");
    EXPECT_DOUBLE_EQ(after[i]["loss"].get<double>(), before[i]["loss"].get<double>()) << "step " << i + 1;
  }
}

TEST(DistRun, ResumeWithoutACheckpointOrFromAnotherRunsIsRefusedClearly) {
  TempDir dir;
  auto none = run_dist(dir, checkpointed_switch_file(dir, "fresh") + " --resume");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("fresh/checkpoint/latest.json"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("none was committed"), std::string::npos) << none.err;
  SKIP_WITHOUT_GLOO();
  ASSERT_EQ(run_dist(dir, checkpointed_switch_file(dir, "run")).status, 0);
  std::string three = checkpointed_switch_file(dir, "run", 3);  // the same output, three workers
  auto other = run_dist(dir, three + " --resume");
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find("run.workers"), std::string::npos) << other.err;
  EXPECT_TRUE(path_exists(dir.file("run/result.json")));  // the finished run's results stay
}

TEST(DistRun, ResumeIfAnyStartsAfreshWithoutACheckpointAndResumesFromOne) {
  SKIP_WITHOUT_GLOO();
  TempDir dir;
  std::string file = cluster_file(dir, "run", "workers = 2\ncheckpoint_steps = 4\n");
  auto first = run_dist(dir, file + " --resume-if-any");
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(dir.file("run/result.json")))["resumed"], false);
  auto again = run_dist(dir, file + " --resume-if-any");
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("resuming at step 8"), std::string::npos) << again.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(dir.file("run/result.json")))["resumed"], true);
  EXPECT_EQ(steps_of(dir.file("run/steps-rank0.jsonl")), one_to(8));
}

TEST(DistRun, BadClusterFileExitsWithStatus2) {
  TempDir dir;
  auto run = run_dist(dir, cluster_file(dir, "bad", "workers = 2\nstrategy = \"gossip\"\n"));
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("cluster.strategy"), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("bad")));
  auto missing = run_dist(dir, dir.file("nope.toml"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("nope.toml"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace colo::dist
