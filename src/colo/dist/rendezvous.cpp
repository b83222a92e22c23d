#include "colo/dist/rendezvous.h"

#include <cstdlib>
#include <stdexcept>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "colo/dist/rendezvous_store.h"

namespace colo::dist {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

int env_int(const char* name) {
  const char* value = env(name);
  char* end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  if (*end != '\0' || parsed < 0) {
    throw std::runtime_error(std::string("environment variable ") + name + "=" + value +
                             " is not a non-negative integer");
  }
  return static_cast<int>(parsed);
}

}  // namespace

std::optional<Membership> membership_from_environment() {
  static const char* kConventions[][2] = {{"COLO_DIST_RANK", "COLO_DIST_WORLD"},
                                          {"RANK", "WORLD_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"}};
  for (const auto& names : kConventions) {
    if (!env(names[0])) continue;
    if (!env(names[1])) {
      throw std::runtime_error(std::string(names[0]) + " is set but " + names[1] + " is not");
    }
    Membership member;
    member.rank = env_int(names[0]);
    member.world = env_int(names[1]);
    if (member.world < 1 || member.rank >= member.world) {
      throw std::runtime_error("rank " + std::to_string(member.rank) + " is outside a world of " +
                               std::to_string(member.world));
    }
    if (const char* rendezvous = env("COLO_DIST_RENDEZVOUS")) {
      member.rendezvous = rendezvous;
    } else if (env("MASTER_ADDR") && env("MASTER_PORT")) {
      member.rendezvous = std::string("tcp://") + env("MASTER_ADDR") + ":" + env("MASTER_PORT");
    } else {
      throw std::runtime_error(std::string(names[0]) +
                               " is set but neither COLO_DIST_RENDEZVOUS nor MASTER_ADDR/MASTER_PORT is");
    }
    return member;
  }
  return std::nullopt;
}

Rendezvous::Rendezvous(const Membership& member, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(Impl{member, timeout, {}})) {
  const std::string& where = member.rendezvous;
  if (where.rfind("file://", 0) == 0) {
    impl_->store = c10::make_intrusive<c10d::FileStore>(where.substr(7), member.world);
  } else if (where.rfind("tcp://", 0) == 0) {
    auto colon = where.rfind(':');
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(std::stoi(where.substr(colon + 1)));
    options.isServer = member.rank == 0;
    options.numWorkers = static_cast<size_t>(member.world);
    options.waitWorkers = true;
    options.timeout = timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(where.substr(6, colon - 6), options);
  } else {
    throw std::runtime_error("rendezvous \"" + where + "\" is neither tcp://HOST:PORT nor file:///PATH");
  }
  impl_->store->setTimeout(timeout);
}

Rendezvous::~Rendezvous() = default;

const Membership& Rendezvous::member() const { return impl_->member; }

std::string Rendezvous::local_host() const {
  if (const char* host = env("COLO_DIST_HOST")) return host;
  if (impl_->member.rendezvous.rfind("tcp://127.", 0) == 0) return "127.0.0.1";
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}
std::chrono::milliseconds Rendezvous::timeout() const { return impl_->timeout; }
Rendezvous::Impl& Rendezvous::impl() { return *impl_; }

void Rendezvous::set(const std::string& key, const std::string& value) {
  impl_->store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

bool Rendezvous::has(const std::string& key) { return impl_->store->check({key}); }

std::string Rendezvous::get(const std::string& key) {
  std::vector<uint8_t> value = impl_->store->get(key);
  return std::string(value.begin(), value.end());
}

}  // namespace colo::dist
