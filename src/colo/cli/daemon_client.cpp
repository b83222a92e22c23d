#include "colo/cli/daemon_client.h"

#if COLO_HAS_HTTP
#include <httplib.h>
#endif

#include "colo/core/error.h"
#include "colo/sched/store.h"
#include "colo/server/daemon_info.h"
#include "colo/server/token.h"

namespace colo::cli {
namespace {

#if COLO_HAS_HTTP
std::string server_message(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.contains("error")) return j["error"].get<std::string>();
  return body;
}
#endif

}  // namespace

DaemonClient::DaemonClient(std::string host, int port, std::string token, std::string store)
    : host_(std::move(host)), port_(port), token_(std::move(token)), store_(std::move(store)) {}

#if !COLO_HAS_HTTP
// Built without cpp-httplib: there is no daemon to talk to; the job
// commands use the store directly.
std::optional<DaemonClient> DaemonClient::find() { return std::nullopt; }
nlohmann::json DaemonClient::get(const std::string&) const { throw std::runtime_error("built without colod"); }
nlohmann::json DaemonClient::post(const std::string&, const nlohmann::json&) const {
  throw std::runtime_error("built without colod");
}
std::string DaemonClient::get_text(const std::string&, bool*) const { throw std::runtime_error("built without colod"); }
#else
std::optional<DaemonClient> DaemonClient::find() {
  std::string state = sched::state_directory();
  auto info = server::find_daemon(state);
  if (!info) return std::nullopt;
  return DaemonClient(info->host, info->port, server::read_token(server::token_path(state)), info->store);
}

namespace {

template <typename Call>
httplib::Result checked(const std::string& host, int port, const std::string& path, Call call) {
  httplib::Result result = call();
  if (!result) {
    throw std::runtime_error("colod at " + host + ":" + std::to_string(port) + " did not answer " + path + " (" +
                             httplib::to_string(result.error()) + ")");
  }
  int status = result->status;
  if (status == 400 || status == 404) throw InputError("colod", "", server_message(result->body));
  if (status >= 300) {
    throw std::runtime_error("colod answered " + std::to_string(status) + " to " + path + ": " +
                             server_message(result->body));
  }
  return result;
}

}  // namespace

nlohmann::json DaemonClient::get(const std::string& path) const {
  httplib::Client client(host_, port_);
  client.set_bearer_token_auth(token_.c_str());
  auto result = checked(host_, port_, path, [&] { return client.Get(path.c_str()); });
  return nlohmann::json::parse(result->body);
}

nlohmann::json DaemonClient::post(const std::string& path, const nlohmann::json& body) const {
  httplib::Client client(host_, port_);
  client.set_bearer_token_auth(token_.c_str());
  std::string text = body.dump();
  auto result = checked(host_, port_, path, [&] { return client.Post(path.c_str(), text, "application/json"); });
  return nlohmann::json::parse(result->body);
}

std::string DaemonClient::get_text(const std::string& path, bool* final) const {
  httplib::Client client(host_, port_);
  client.set_bearer_token_auth(token_.c_str());
  auto result = checked(host_, port_, path, [&] { return client.Get(path.c_str()); });
  if (final) *final = result->get_header_value("X-Colo-Final") == "1";
  return result->body;
}
#endif

std::optional<DaemonClient> daemon_unless_store(const CLI::App* command) {
  if (command->count("--store") > 0) return std::nullopt;
  return DaemonClient::find();
}

}  // namespace colo::cli
