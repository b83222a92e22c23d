#include "colo/gpu/mps.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "colo/core/files.h"
#include "colo/core/interrupt_cleanup.h"
#include "colo/core/stopwatch.h"

namespace colo::gpu {
std::vector<int> parse_pid_list(const std::string& text) {
  std::vector<int> pids;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    if (!word.empty() && word.find_first_not_of("0123456789") == std::string::npos) {
      pids.push_back(std::stoi(word));
    }
  }
  return pids;
}

std::string pinned_mem_limit_value(const std::vector<int>& device_ordinals, int64_t bytes) {
  int64_t mib = std::max<int64_t>(1, bytes >> 20);
  std::string value;
  for (int ordinal : device_ordinals) {
    value += (value.empty() ? "" : ",") + std::to_string(ordinal) + "=" + std::to_string(mib) + "M";
  }
  return value;
}

MpsDaemon::MpsDaemon(MpsOptions options) : options_(std::move(options)) {
  if (options_.pipe_dir.empty() || options_.log_dir.empty()) {
    throw MpsError("MPS needs a private pipe and log directory");
  }
  if (options_.pipe_dir == "/tmp/nvidia-mps") {
    throw MpsError("refusing the system-wide MPS pipe directory /tmp/nvidia-mps");
  }
  for (const auto& dir : {options_.pipe_dir, options_.log_dir}) {
    std::string error = make_directories(dir);
    if (!error.empty()) throw MpsError("cannot create " + dir + ": " + error);
  }
  if (control_pid()) {
    if (!healthy()) throw MpsError("an MPS daemon on " + options_.pipe_dir + " does not answer");
    return;  // someone else's daemon: use it, leave it running
  }
  // Registered before the start, so that an interrupt at any moment of it
  // (the daemon's pid file written, colo not yet told) still quits it.
  if (options_.quit_on_interrupt) cleanup_id_ = add_interrupt_cleanup([this] { quit_on_interrupt(); });
  try {
    start();
  } catch (...) {
    if (cleanup_id_ != 0) remove_interrupt_cleanup(cleanup_id_);
    throw;
  }
}

void MpsDaemon::start() {
  {
    std::lock_guard<std::mutex> lock(start_mutex_);
    if (interrupted_) throw MpsError("interrupted before the MPS daemon started");
    ProcessResult start = run_process({options_.control, "-d"}, control_environment(), "", options_.timeout_s);
    if (start.exit_code != 0) {
      throw MpsError("cannot start " + options_.control + " -d (exit " + std::to_string(start.exit_code) +
                     "): " + start.output);
    }
    started_here_ = true;
  }
  Stopwatch clock;
  while (!healthy()) {
    if (clock.elapsed_s() > options_.timeout_s) {
      quit();
      throw MpsError("MPS daemon on " + options_.pipe_dir + " did not answer within " +
                     std::to_string(options_.timeout_s) + " s; see " + options_.log_dir + "/control.log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void MpsDaemon::quit_on_interrupt() {
  std::lock_guard<std::mutex> lock(start_mutex_);
  interrupted_ = true;
  quit();
}

MpsDaemon::~MpsDaemon() {
  try {
    quit();
  } catch (...) {
  }
  if (cleanup_id_ != 0) remove_interrupt_cleanup(cleanup_id_);
}

EnvironmentOverrides MpsDaemon::control_environment() const {
  EnvironmentOverrides env{{"CUDA_MPS_PIPE_DIRECTORY", options_.pipe_dir},
                           {"CUDA_MPS_LOG_DIRECTORY", options_.log_dir}};
  if (!options_.visible_devices.empty()) env["CUDA_VISIBLE_DEVICES"] = options_.visible_devices;
  return env;
}

std::optional<int> MpsDaemon::control_pid() const {
  std::ifstream in(options_.pipe_dir + "/nvidia-cuda-mps-control.pid");
  int pid = 0;
  if (!(in >> pid) || !process_alive(pid)) return std::nullopt;
  return pid;
}

bool MpsDaemon::healthy() const {
  if (!control_pid()) return false;
  try {
    command("get_server_list");
    return true;
  } catch (const MpsError&) {
    return false;
  }
}

std::string MpsDaemon::command(const std::string& line) const {
  ProcessResult result = run_process({options_.control}, control_environment(), line + "\n", options_.timeout_s);
  if (result.timed_out || result.exit_code != 0) {
    throw MpsError("MPS command '" + line + "' failed: " + result.output);
  }
  return result.output;
}

std::vector<int> MpsDaemon::server_pids() const { return parse_pid_list(command("get_server_list")); }

std::vector<int> MpsDaemon::client_pids(int server_pid) const {
  return parse_pid_list(command("get_client_list " + std::to_string(server_pid)));
}

EnvironmentOverrides MpsDaemon::client_environment(std::optional<int> thread_percentage,
                                                   std::optional<int64_t> mem_limit_bytes,
                                                   const std::vector<int>& device_ordinals) const {
  EnvironmentOverrides env{{"CUDA_MPS_PIPE_DIRECTORY", options_.pipe_dir},
                           {"CUDA_MPS_LOG_DIRECTORY", options_.log_dir}};
  if (thread_percentage) env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(*thread_percentage);
  if (mem_limit_bytes) {
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = pinned_mem_limit_value(device_ordinals, *mem_limit_bytes);
  }
  return env;
}

void MpsDaemon::quit() {
  if (!started_here_ || quit_.exchange(true)) return;
  std::optional<int> pid = control_pid();
  if (!pid) return;
  run_process({options_.control}, control_environment(), "quit\n", options_.timeout_s);
  Stopwatch clock;
  while (process_alive(*pid) && clock.elapsed_s() < options_.timeout_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (process_alive(*pid)) ::kill(*pid, SIGKILL);  // last resort: never leave it behind
}

}  // namespace colo::gpu
