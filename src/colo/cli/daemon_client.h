#pragma once
// The client side of colod's HTTP API, for the job commands (submit, queue,
// show, cancel, logs).

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace colo::cli {

class DaemonClient {
 public:
  // A client for the colod that colo's state directory names, if one is
  // running; nullopt otherwise. Throws InputError when a daemon runs but its
  // token file is missing or open to others.
  static std::optional<DaemonClient> find();

  // JSON of GET/POST `path`; throws std::runtime_error naming colod and the
  // server's message for a failed call (InputError for a 400/404).
  nlohmann::json get(const std::string& path) const;
  nlohmann::json post(const std::string& path, const nlohmann::json& body) const;
  // Text of GET `path`; `final` is set from the X-Colo-Final header.
  std::string get_text(const std::string& path, bool* final) const;

  const std::string& store() const { return store_; }
  int port() const { return port_; }

 private:
  DaemonClient(std::string host, int port, std::string token, std::string store);
  std::string host_;
  int port_;
  std::string token_;
  std::string store_;
};

// The running colod for a job command, unless the command was given
// --store (then nullopt: it reads that store itself).
std::optional<DaemonClient> daemon_unless_store(const CLI::App* command);

}  // namespace colo::cli
