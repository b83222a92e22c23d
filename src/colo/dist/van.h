#pragma once
// The parameter server's transport ("van", as ps-lite calls it): framed
// messages over TCP, each a fixed header and an optional float32 payload.
// ZeroMQ is not on the GPU machine's image and the wheel's LibTorch ships no
// Gloo headers for c10d point-to-point there, so colo carries its own.

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

namespace colo::dist {

enum class MessageType : uint32_t {
  kHello = 1,   // worker -> server: here I am; answered with kParams once initialised
  kInit = 2,    // worker 0 -> server: parameters and optimiser state of its key range
  kPush = 3,    // worker -> server: gradients of a step; answered with kParams
  kParams = 4,  // server -> worker: the key range's current parameters
  kDone = 5,    // worker -> server: no more pushes from me
};

struct Message {
  MessageType type = MessageType::kHello;
  int32_t worker = 0;
  int64_t step = 0;       // kPush: the worker's step; kInit: the optimiser's step count
  double lr = 0;          // kPush: learning rate to apply
  double hold_s = 0;      // kParams: how long the server held the reply back (sync/SSP)
  at::Tensor payload;     // float32 CPU, contiguous; undefined for none
};

// One TCP connection. Every call fails with std::runtime_error naming the
// peer when the peer closes the connection or `timeout_s` passes.
class Connection {
 public:
  Connection() = default;
  Connection(int fd, std::string peer);
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  ~Connection();

  void send(const Message& message);
  // Reads one message; a payload goes into `into` when it is given and
  // large enough (no allocation), else into a new tensor.
  Message receive(double timeout_s, at::Tensor* into = nullptr);
  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  void set_peer(std::string peer) { peer_ = std::move(peer); }

 private:
  void write_all(const void* data, size_t bytes);
  void read_all(void* data, size_t bytes, double timeout_s);
  int fd_ = -1;
  std::string peer_;
};

// Connects to "HOST:PORT", retrying until `timeout_s`.
Connection connect_to(const std::string& address, double timeout_s, const std::string& peer);

// A listening socket on `host` (an address of this machine) and a free port.
class Listener {
 public:
  explicit Listener(const std::string& host);
  ~Listener();
  std::string address() const;  // "HOST:PORT"
  int fd() const { return fd_; }
  // The next incoming connection; std::runtime_error after `timeout_s` (< 0: wait forever).
  Connection accept(double timeout_s, const std::string& peer);

 private:
  int fd_ = -1;
  std::string host_;
  int port_ = 0;
};

// Index in `fds` of a socket with data to read, a connection to accept, or
// a closed peer; -1 after `timeout_s` (< 0: wait forever). Scans round-robin
// so that no peer starves another.
int wait_readable(const std::vector<int>& fds, double timeout_s);

}  // namespace colo::dist
