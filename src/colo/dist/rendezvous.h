#pragma once
// How the processes of one distributed run find each other: a c10d key-value
// store (TCPStore served by rank 0, or a FileStore on a shared file system).

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace colo::dist {

// Who this process is in a run of `world` processes.
struct Membership {
  int rank = 0;
  int world = 1;
  std::string rendezvous;  // tcp://HOST:PORT or file:///PATH (see ClusterSpec)
};

// This process's place in a run, from the environment: COLO_DIST_RANK,
// COLO_DIST_WORLD and COLO_DIST_RENDEZVOUS (set by `colo dist`), else
// RANK/WORLD_SIZE (torchrun), SLURM_PROCID/SLURM_NTASKS (srun),
// OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE or PMI_RANK/PMI_SIZE (mpirun),
// with MASTER_ADDR and MASTER_PORT. nullopt when no rank is set (the caller
// is the launcher). Throws std::runtime_error for a rank set without the rest.
std::optional<Membership> membership_from_environment();

// The run's store. Construction waits (up to `timeout`) until every member
// has connected, so a missing member is reported rather than waited on.
class Rendezvous {
 public:
  struct Impl;
  Rendezvous(const Membership& member, std::chrono::milliseconds timeout);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  const Membership& member() const;
  // The address this process offers its peers (its parameter server's
  // socket, its Gloo device): COLO_DIST_HOST when set (a host whose name
  // does not resolve to the interface its peers reach, or "hosts" played by
  // several loopback addresses of one machine); else 127.0.0.1 when the run
  // meets on a loopback rendezvous (one host); else this host's name, which
  // the peers on other hosts resolve.
  std::string local_host() const;
  std::chrono::milliseconds timeout() const;
  void set(const std::string& key, const std::string& value);
  // Waits until `key` is set (throws std::runtime_error after the timeout).
  std::string get(const std::string& key);
  // Whether `key` is set now; does not wait for it.
  bool has(const std::string& key);
  // The underlying store (a c10::intrusive_ptr<c10d::Store>), for communicator.cpp.
  Impl& impl();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace colo::dist
