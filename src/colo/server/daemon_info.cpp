#include "colo/server/daemon_info.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"

namespace colo::server {

std::string daemon_info_path(const std::string& state_dir) { return state_dir + "/colod.json"; }
std::string token_path(const std::string& state_dir) { return state_dir + "/token"; }

void publish_daemon(const std::string& state_dir, const DaemonInfo& info) {
  make_directories(state_dir);
  nlohmann::json j{{"host", info.host}, {"port", info.port}, {"pid", info.pid}, {"store", info.store}};
  std::string path = daemon_info_path(state_dir);
  write_file_atomically(path, j.dump(1) + "\n");
  ::chmod(path.c_str(), 0600);
}

void withdraw_daemon(const std::string& state_dir, int pid) {
  auto info = find_daemon(state_dir);
  std::string path = daemon_info_path(state_dir);
  if (path_exists(path) && (!info || info->pid == pid)) remove_tree(path);
}

std::optional<DaemonInfo> find_daemon(const std::string& state_dir) {
  std::string path = daemon_info_path(state_dir);
  if (!path_exists(path)) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(read_file(path));
    DaemonInfo info{j.at("host").get<std::string>(), j.at("port").get<int>(), j.at("pid").get<int>(),
                    j.value("store", std::string())};
    if (info.pid <= 0 || !process_alive(info.pid)) return std::nullopt;
    return info;
  } catch (const std::exception&) {
    return std::nullopt;  // half-written or foreign file: no daemon to talk to
  }
}

}  // namespace colo::server
