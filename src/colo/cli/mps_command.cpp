#include "colo/cli/mps_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/interrupt_cleanup.h"
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"
#include "colo/gpu/mps.h"

namespace colo::cli {
namespace {

struct MpsRunArgs {
  int count = 1;
  int percentage = 0;  // 0 = not set
  int64_t mem_limit_mib = 0;
  std::string control = "nvidia-cuda-mps-control";
  std::string dir;
  std::string summary_json;
  std::vector<std::string> command;
};

int run_mps(const MpsRunArgs& args) {
  if (args.command.empty()) throw InputError("colo mps run", "", "expected a command after --");
  if (args.count < 1) throw InputError("--count", "", "expected at least 1");
  if (args.percentage < 0 || args.percentage > 100) throw InputError("--percentage", "", "expected 1..100");
  std::string dir = args.dir.empty() ? temp_directory() + "/colo-mps-" + std::to_string(::getpid()) : args.dir;
  gpu::MpsOptions options;
  options.control = args.control;
  options.pipe_dir = dir + "/pipe";
  options.log_dir = dir + "/log";
  gpu::MpsDaemon daemon(options);
  std::fprintf(stderr, "colo mps: daemon pid %d on %s (%s)\n", daemon.control_pid().value_or(-1),
               options.pipe_dir.c_str(), daemon.started_here() ? "started" : "already running");

  std::optional<int> percentage;
  if (args.percentage > 0) percentage = args.percentage;
  std::optional<int64_t> mem_limit;
  if (args.mem_limit_mib > 0) mem_limit = args.mem_limit_mib << 20;
  // The cleanup is registered before the first client starts, so an
  // interrupt while they start still ends every one already started.
  std::vector<ChildProcess> children;
  std::mutex children_mutex;
  int cleanup = add_interrupt_cleanup([&children, &children_mutex] {
    std::lock_guard<std::mutex> lock(children_mutex);
    for (auto& child : children) child.terminate(5.0);
  });
  children.reserve(args.count);
  for (int i = 0; i < args.count; ++i) {
    EnvironmentOverrides env = daemon.client_environment(percentage, mem_limit);
    env["COLO_MPS_CLIENT_INDEX"] = std::to_string(i);
    std::lock_guard<std::mutex> lock(children_mutex);
    children.emplace_back(args.command, env);
  }

  std::set<int> clients_seen, servers_seen;
  size_t running = children.size();
  while (running > 0) {
    try {
      for (int server : daemon.server_pids()) {
        servers_seen.insert(server);
        for (int client : daemon.client_pids(server)) clients_seen.insert(client);
      }
    } catch (const gpu::MpsError&) {
      // the daemon may be between servers; the next poll sees it again
    }
    running = 0;
    {
      std::lock_guard<std::mutex> lock(children_mutex);
      for (auto& child : children) running += child.poll() ? 0 : 1;
    }
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  remove_interrupt_cleanup(cleanup);

  nlohmann::json summary = {{"clients", args.count}, {"clients_seen", clients_seen.size()},
                            {"servers_seen", servers_seen.size()}, {"exit_codes", nlohmann::json::array()}};
  int worst = 0;
  for (auto& child : children) {
    int code = exit_code_of(child.wait());
    summary["exit_codes"].push_back(code);
    worst = std::max(worst, code);
  }
  std::optional<int> pid = daemon.control_pid();
  daemon.quit();
  summary["daemon_gone"] = !pid || !process_alive(*pid);
  std::printf("clients %d, clients seen by MPS %zu, servers %zu, worst exit %d, daemon gone %s\n",
              args.count, clients_seen.size(), servers_seen.size(), worst,
              summary["daemon_gone"].get<bool>() ? "yes" : "no");
  if (!args.summary_json.empty()) write_file_atomically(args.summary_json, summary.dump(1) + "\n");
  if (args.dir.empty()) remove_tree(dir);
  return worst;
}

}  // namespace

void add_mps_command(CLI::App& app, int& exit_code) {
  CLI::App* mps = app.add_subcommand("mps", "CUDA MPS helpers");
  mps->require_subcommand(1);
  auto args = std::make_shared<MpsRunArgs>();
  CLI::App* run = mps->add_subcommand(
      "run", "Run COUNT copies of a command as clients of a private MPS daemon, then quit it");
  run->add_option("--count", args->count, "copies of the command")->capture_default_str();
  run->add_option("--percentage", args->percentage, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for each client (1..100)");
  run->add_option("--mem-limit-mib", args->mem_limit_mib, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for each client, MiB");
  run->add_option("--control", args->control, "MPS control program")->capture_default_str();
  run->add_option("--dir", args->dir, "private directory for the pipe and log dirs (default: a temp dir)");
  run->add_option("--summary-json", args->summary_json, "write the summary as JSON to this file");
  run->add_option("command", args->command, "command to run (after --)");
  run->footer("\nEach client gets COLO_MPS_CLIENT_INDEX=0..COUNT-1. The daemon is quit at the end,\n"
              "and also on SIGINT/SIGTERM. Exit status: the worst of the clients'.");
  run->callback([args, &exit_code] { exit_code = run_mps(*args); });
}

}  // namespace colo::cli
