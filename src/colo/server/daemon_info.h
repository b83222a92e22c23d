#pragma once
// Where a running colod can be found: `<state dir>/colod.json` (its
// address, port, pid and store) beside `<state dir>/token`.

#include <optional>
#include <string>

namespace colo::server {

struct DaemonInfo {
  std::string host = "127.0.0.1";
  int port = 0;
  int pid = 0;
  std::string store;
};

// colo's state directory: $XDG_STATE_HOME/colo, else ~/.local/state/colo.
std::string state_directory();
std::string daemon_info_path(const std::string& state_dir);
std::string token_path(const std::string& state_dir);

// Writes `info` atomically (mode 0600).
void publish_daemon(const std::string& state_dir, const DaemonInfo& info);
// Removes the file if it still names this process.
void withdraw_daemon(const std::string& state_dir, int pid);
// The daemon the state directory names, if that process is alive.
std::optional<DaemonInfo> find_daemon(const std::string& state_dir);

}  // namespace colo::server
