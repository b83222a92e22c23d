#pragma once
// Control of a CUDA MPS daemon with a private pipe and log directory.

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "colo/core/subprocess.h"

namespace colo::gpu {

class MpsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MpsOptions {
  std::string control = "nvidia-cuda-mps-control";  // the control program
  std::string pipe_dir;       // private; never the system default /tmp/nvidia-mps
  std::string log_dir;        // private
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES for the daemon ("" = inherit)
  double timeout_s = 15.0;    // for start, commands and quit
  // Quit a daemon started here on SIGINT/SIGTERM. A scheduler that lets its
  // jobs outlive it (colod's graceful stop) turns this off and quits the
  // daemon itself when it should.
  bool quit_on_interrupt = true;
};

// An MPS control daemon on a private pipe directory. If one already runs
// there, it is used and left running; otherwise one is started and this
// object quits it on destruction, and on SIGINT/SIGTERM (through
// core/interrupt_cleanup.h). Thread-safe.
class MpsDaemon {
 public:
  // Starts or finds the daemon and waits until it answers. Throws MpsError
  // when the pipe dir is empty or the system default, the control program is
  // missing, or the daemon does not come up within the timeout.
  explicit MpsDaemon(MpsOptions options);
  ~MpsDaemon();
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;

  bool started_here() const { return started_here_; }
  const MpsOptions& options() const { return options_; }
  // pid of the control daemon from its pid file, if it is running.
  std::optional<int> control_pid() const;
  // True when the daemon runs and answers a command.
  bool healthy() const;

  // Environment a client needs: the pipe directory, and optionally its
  // active-thread percentage (1..100) and pinned device-memory limit, the
  // same on each of the devices it uses (ordinals among the daemon's).
  EnvironmentOverrides client_environment(std::optional<int> thread_percentage,
                                          std::optional<int64_t> mem_limit_bytes,
                                          const std::vector<int>& device_ordinals = {0}) const;

  // Sends one command line; returns its output. Throws MpsError on failure.
  std::string command(const std::string& line) const;
  // pids of the running MPS servers (one per GPU with clients).
  std::vector<int> server_pids() const;
  // pids of the clients of server `server_pid`.
  std::vector<int> client_pids(int server_pid) const;

  // Asks the daemon to quit and waits until it is gone; idempotent. Only
  // acts on a daemon this object started.
  void quit();
  // Leaves the daemon running when this object goes (its clients outlive
  // it; the next user finds it on the same pipe directory).
  void leave_running() { quit_ = true; }

 private:
  EnvironmentOverrides control_environment() const;
  // Starts the daemon; an interrupt during the start waits for it to finish
  // and then quits what it started.
  void start();
  // Runs on SIGINT/SIGTERM (core/interrupt_cleanup.h).
  void quit_on_interrupt();

  MpsOptions options_;
  std::mutex start_mutex_;  // held while starting; an interrupt waits on it
  bool interrupted_ = false;  // guarded by start_mutex_
  std::atomic<bool> started_here_{false};
  std::atomic<bool> quit_{false};
  int cleanup_id_ = 0;
};

// Parses whitespace-separated pids (the output of get_server_list and
// get_client_list); words that are not numbers are skipped.
std::vector<int> parse_pid_list(const std::string& text);

// The environment value for CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("0=4096M",
// or "0=4096M,1=4096M" for several devices).
std::string pinned_mem_limit_value(const std::vector<int>& device_ordinals, int64_t bytes);

}  // namespace colo::gpu
