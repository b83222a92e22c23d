#pragma once
// The parameter server's transport, on ZeroMQ: each server binds a ROUTER
// socket, each worker reaches it through a DEALER socket named after its
// index, and a message is a fixed header, a byte blob and an optional
// float32, bfloat16 or uint8 (packed 8-bit codes) payload (sent without a copy). Where worker and server share a
// host and a CUDA build, the payloads skip this transport: they move device
// to device through shared device memory (gpu/shared_device_memory.h) and
// only the small messages go over ZeroMQ.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

namespace colo::dist {

enum class MessageType : uint32_t {
  kHello = 1,    // worker -> server: here I am; answered with kWelcome
  kInit = 2,     // worker 0 -> server: parameters and optimiser state of its key range
  kPush = 3,     // worker -> server: gradients of a step; answered with kParams
  kParams = 4,   // server -> worker: the key range's current parameters
  kDone = 5,     // worker -> server: no more pushes from me
  kWelcome = 6,  // server -> worker: the shared device buffers to use, or none
  kSnapshot = 7, // worker 0 -> server: the key range's state, for a checkpoint; answered with kState
  kState = 8,    // server -> worker 0: parameters and optimiser state of its key range (as kInit's)
};

struct Message {
  MessageType type = MessageType::kHello;
  int32_t worker = 0;
  int64_t step = 0;     // kPush: the worker's step; kInit, kState: the optimiser's step count
  int64_t count = 0;    // kHello: floats in the key range
  double lr = 0;        // kPush: learning rate to apply
  double hold_s = 0;    // kParams: how long the server held the reply back (sync/SSP)
  std::string blob;     // kHello: the worker's host and device; kWelcome: buffer handles
  // float32, bfloat16 or uint8 CPU, contiguous; undefined for none. A
  // bfloat16 kPush carries the gradients rounded; a bfloat16 kParams carries
  // what to add to the parameters the worker holds. A uint8 payload carries
  // the same packed as 8-bit codes (int8_codec.h; ParamServerOptions::compression).
  at::Tensor payload;
};

// A message from one worker, as a server receives it.
struct Envelope {
  int worker = 0;
  Message message;
};

// A server's end: listens on an ephemeral TCP port at `host`, an IPv4
// address (that address alone) or a host name (every interface, since
// ZeroMQ binds no names; the name is what address() gives the workers, for
// them to resolve). Throws std::runtime_error naming the server when it
// cannot listen. Not thread-safe.
class ServerSocket {
 public:
  ServerSocket(const std::string& host, std::string name);
  ~ServerSocket();
  ServerSocket(const ServerSocket&) = delete;
  ServerSocket& operator=(const ServerSocket&) = delete;

  // "tcp://HOST:PORT", for the workers to connect to.
  std::string address() const;
  // The next message from any worker; nullopt when none came within
  // `timeout_s` (< 0: wait forever). A payload goes into `into` when it is
  // given and of the same size and type (no allocation).
  std::optional<Envelope> receive(double timeout_s, at::Tensor* into = nullptr);
  void send(int worker, const Message& message);
  // Worker connections that have closed so far (a worker that is done
  // closes its own too). Messages already queued are received first.
  int64_t disconnections() const;
  // Which workers those were, in the order they closed: each one whose
  // last message came over a connection that has closed since (a
  // connection that never carried a message is counted above alone).
  const std::vector<int>& closed_workers() const;

 private:
  struct Sockets;
  std::unique_ptr<Sockets> sockets_;
  std::string name_;
};

// What a ServerLink throws once its server closed the connection (it
// ended, or died: a restarted one listens at a new address).
struct ServerClosed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A worker's end of its link to one server. Every call fails with
// ServerClosed naming the server when it closed the connection, and
// receive() with std::runtime_error naming it when `timeout_s` passed. Not
// thread-safe.
class ServerLink {
 public:
  ServerLink(const std::string& address, int worker, std::string peer);
  ~ServerLink();
  ServerLink(ServerLink&& other) noexcept;
  ServerLink& operator=(ServerLink&& other) noexcept;

  void send(const Message& message);
  // A payload goes into `into` when it is given and of the same size and type.
  Message receive(double timeout_s, at::Tensor* into = nullptr);
  const std::string& peer() const { return peer_; }
  // Whether the server has closed the connection, as known now (no wait).
  bool closed();

 private:
  struct Sockets;
  std::unique_ptr<Sockets> sockets_;
  std::string peer_;
};

// This machine's host name, as workers and servers compare them.
std::string this_host_name();

}  // namespace colo::dist
