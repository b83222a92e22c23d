#pragma once
// Where a running colod can be found: `<state dir>/colod.json` (its
// address, port, pid and store) beside `<state dir>/token`; the state
// directory is sched::state_directory() unless colod is told otherwise.

#include <optional>
#include <string>

namespace colo::server {

struct DaemonInfo {
  std::string host = "127.0.0.1";
  int port = 0;
  int pid = 0;
  std::string store;
};

std::string daemon_info_path(const std::string& state_dir);
std::string token_path(const std::string& state_dir);

// Writes `info` atomically (mode 0600).
void publish_daemon(const std::string& state_dir, const DaemonInfo& info);
// Removes the file if it still names this process.
void withdraw_daemon(const std::string& state_dir, int pid);
// The daemon the state directory names, if that process is alive.
std::optional<DaemonInfo> find_daemon(const std::string& state_dir);

}  // namespace colo::server
