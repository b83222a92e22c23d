#include "colo/dist/launcher.h"

#include <sys/wait.h>

#include <algorithm>
#include <optional>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "colo/core/cpu_share.h"
#include "colo/core/files.h"
#include "colo/core/interrupt_cleanup.h"
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/core/subprocess.h"
#include "colo/core/table.h"
#include "colo/core/tcp_port.h"
#include "colo/dist/rendezvous.h"
#include "colo/dist/run_checkpoint.h"
#include "colo/dist/run_mps.h"

namespace colo::dist {
namespace {

// How long, after a process failed, the others may take to end on their own
// before they are stopped (one of them may have found the bad input that
// made the first fail).
constexpr double kPeerExitGraceS = 2.0;

// How many times a server that dies is restarted (with [param_server]
// rejoin_s) before its death fails the run.
constexpr int kServerRestarts = 3;

std::string role_of(const ClusterSpec& spec, int64_t rank) {
  return rank < spec.workers ? "worker " + std::to_string(rank)
                             : "server " + std::to_string(rank - spec.workers);
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

std::string log_tail(const std::string& path, int lines) {
  if (!path_exists(path)) return "";
  std::string text = read_file(path);
  if (text.empty()) return "";  // it died before writing a line
  size_t at = text.size();
  for (int n = 0; n <= lines && at != std::string::npos && at > 0; ++n) at = text.rfind('\n', at - 1);
  return at == std::string::npos ? text : text.substr(at + 1);
}

}  // namespace

int launch_local(const ClusterSpec& spec, const std::vector<std::string>& argv) {
  const std::string& out = spec.train.output;
  ensure_writable_dir(out, spec.train.source, "output");
  std::string rendezvous = spec.rendezvous;
  if (rendezvous.rfind("tcp://", 0) == 0 && rendezvous.substr(rendezvous.rfind(':')) == ":0") {
    rendezvous = rendezvous.substr(0, rendezvous.rfind(':') + 1) + std::to_string(free_tcp_port());
  }
  if (rendezvous.rfind("file://", 0) == 0 && path_exists(rendezvous.substr(7))) {
    remove_tree(rendezvous.substr(7));  // a store file left by an earlier run would confuse this one
  }
  std::fprintf(stderr, "colo dist: %lld workers%s, strategy %s, rendezvous %s\n",
               static_cast<long long>(spec.workers),
               spec.uses_servers() ? (" + " + std::to_string(spec.servers) + " servers").c_str() : "",
               spec.strategy.c_str(), rendezvous.c_str());

  // Quit (after every rank has ended) when this function returns.
  RunMps mps(spec);

  // optional: a restarted server's process replaces its first in place.
  std::vector<std::optional<ChildProcess>> children(static_cast<size_t>(spec.world()));
  std::vector<EnvironmentOverrides> envs;
  std::vector<std::string> logs;
  nlohmann::json listing = nlohmann::json::array();
  for (int64_t rank = 0; rank < spec.world(); ++rank) {
    EnvironmentOverrides env{{"COLO_DIST_RANK", std::to_string(rank)},
                             {"COLO_DIST_WORLD", std::to_string(spec.world())},
                             {"COLO_DIST_RENDEZVOUS", rendezvous}};
    share_cores(env, static_cast<size_t>(spec.world()));
    env.insert(mps.environment().begin(), mps.environment().end());
    std::string log = out + "/rank" + std::to_string(rank) + ".log";
    if (path_exists(log)) remove_tree(log);
    logs.push_back(rank == 0 ? "" : log);
    envs.push_back(env);
    children[static_cast<size_t>(rank)].emplace(argv, env, logs.back(), /*end_with_parent=*/true);
    listing.push_back({{"rank", rank}, {"role", role_of(spec, rank)},
                       {"pid", children[static_cast<size_t>(rank)]->pid()}, {"log", logs.back()}});
  }
  write_file_atomically(out + "/processes.json", listing.dump(2) + "\n");
  int cleanup = add_interrupt_cleanup([&children] {
    for (auto& child : children) child->terminate(3.0);
  });

  std::vector<bool> ended(children.size(), false);
  std::vector<int> restarts(children.size(), 0);
  size_t running = children.size();
  // A failed process's exit status and what it wrote last, on stderr.
  auto report = [&](size_t rank, int status, const std::string& then) {
    std::fprintf(stderr, "colo dist: rank %zu (%s, pid %d) %s; %s\n", rank,
                 role_of(spec, static_cast<int64_t>(rank)).c_str(), children[rank]->pid(),
                 how_it_ended(status).c_str(), then.c_str());
    std::string tail = log_tail(logs[rank], 5);
    if (!tail.empty()) std::fprintf(stderr, "--- end of %s ---\n%s", logs[rank].c_str(), tail.c_str());
  };
  auto stopping = [&] { return "stopping the other " + std::to_string(running) + " processes"; };
  // A server that died (not of bad input) is started again where the
  // workers wait to rejoin it, from the committed checkpoint.
  auto restart_server = [&](size_t rank, int status) {
    bool server = static_cast<int64_t>(rank) >= spec.workers;
    if (!server || spec.param_server.rejoin_s <= 0 || restarts[rank] >= kServerRestarts ||
        (WIFEXITED(status) && WEXITSTATUS(status) == 2) || !has_committed_checkpoint(out)) {
      return false;
    }
    ++restarts[rank];
    report(rank, status, "restarting it from the checkpoint of step " +
                             std::to_string(committed_checkpoint(out)["step"].get<int64_t>()) + " (restart " +
                             std::to_string(restarts[rank]) + " of " + std::to_string(kServerRestarts) + ")");
    children[rank].emplace(argv, envs[rank], logs[rank], /*end_with_parent=*/true);
    listing[rank]["pid"] = children[rank]->pid();
    write_file_atomically(out + "/processes.json", listing.dump(2) + "\n");
    return true;
  };
  // Bad input a process found (exit 2: a missing data folder, a resume that
  // does not match) is the run's bad input too.
  auto bad_input = [](int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 2; };
  int failure = 0;
  while (running > 0 && !failure) {
    for (size_t rank = 0; rank < children.size(); ++rank) {
      if (ended[rank]) continue;
      auto status = children[rank]->poll();
      if (!status) continue;
      if (!(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) && restart_server(rank, *status)) continue;
      ended[rank] = true;
      --running;
      if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) continue;
      report(rank, *status, stopping());
      failure = bad_input(*status) ? 2 : 1;
      break;
    }
    if (!failure) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // A peer of a process that stopped on bad input often fails first, of the
  // lost connection: the others get a moment to say whether one of them
  // found bad input, which is then the run's cause.
  for (Stopwatch grace; failure == 1 && running > 0 && grace.elapsed_s() < kPeerExitGraceS;) {
    for (size_t rank = 0; rank < children.size() && failure == 1; ++rank) {
      if (ended[rank]) continue;
      auto status = children[rank]->poll();
      if (!status) continue;
      ended[rank] = true;
      --running;
      if (bad_input(*status)) {
        report(rank, *status, stopping());
        failure = 2;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (failure) {
    for (size_t rank = 0; rank < children.size(); ++rank) {
      if (!ended[rank]) children[rank]->terminate(3.0);
    }
  }
  remove_interrupt_cleanup(cleanup);
  if (failure) return failure;
  print_result_table(out);
  return 0;
}

void print_result_table(const std::string& output) {
  std::string path = output + "/result.json";
  if (!path_exists(path)) return;
  auto r = nlohmann::json::parse(read_file(path));
  std::string strategy = r.value("strategy", "");
  if (!r.value("mode", std::string()).empty()) strategy += "/" + r.value("mode", std::string());
  TablePrinter table({{"strategy", 22}, {"workers", 8}, {"steps", 7}, {"train s", 9}, {"samples/s", 11},
                      {"test acc", 9}, {"to target s", 12}, {"compute ms", 11}, {"comm ms", 9},
                      {"wait ms", 9}, {"MB/step", 9}});
  table.header();
  auto ms = [&](const char* key) { return fixed(1000 * r.value(key, 0.0), 2); };
  table.row({strategy, std::to_string(r.value("workers", 0)), std::to_string(r.value("steps", 0)),
             fixed(r.value("train_s", 0.0), 2), fixed(r.value("samples_per_s", 0.0), 0),
             fixed(r.value("test_accuracy", 0.0), 4),
             r["time_to_target_s"].is_number() ? fixed(r["time_to_target_s"].get<double>(), 2) : "-",
             ms("mean_compute_s"), ms("mean_communication_s"), ms("mean_waiting_s"),
             fixed(r.value("bytes_sent_per_step", 0.0) / 1e6, 3)});
  std::printf("results: %s/result.json, per-step records %s/steps-rank*.jsonl, evaluations %s/eval.jsonl\n",
              output.c_str(), output.c_str(), output.c_str());
}

}  // namespace colo::dist
