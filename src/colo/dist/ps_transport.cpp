#include "colo/dist/ps_transport.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <unordered_map>
#include <stdexcept>
#include <thread>

#include <ATen/ATen.h>
#include <zmq.hpp>

#include "colo/core/stopwatch.h"

namespace colo::dist {
namespace {

constexpr uint32_t kMagic = 0x636f6c6f;  // "colo"
constexpr const char* kWorkerPrefix = "worker-";

struct Header {
  uint32_t magic;
  uint32_t type;
  int32_t worker;
  int32_t element;  // the payload's element type: kFloat32Element, kBFloat16Element or kByteElement
  int64_t step;
  int64_t count;
  double lr;
  double hold_s;
  int64_t elements;
};

constexpr int32_t kFloat32Element = 0;
constexpr int32_t kBFloat16Element = 1;
constexpr int32_t kByteElement = 2;  // packed 8-bit codes (int8_codec.h)

at::ScalarType element_type(int32_t element) {
  return element == kBFloat16Element ? at::kBFloat16 : (element == kByteElement ? at::kByte : at::kFloat);
}

bool known_element(int32_t element) {
  return element == kFloat32Element || element == kBFloat16Element || element == kByteElement;
}

// I/O threads of the process's context: each connection is served by one,
// so a server's workers (and a worker's servers) move their payloads in
// parallel instead of through one thread.
int io_threads() {
  unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores / 4, 1u, 4u));
}

// One context for the process, never destroyed: destroying it at exit would
// block on any socket an exception left open.
zmq::context_t& transport_context() {
  static auto* context = new zmq::context_t(io_threads());
  return *context;
}

// A PAIR socket that receives `socket`'s disconnection events.
zmq::socket_t watch_disconnections(zmq::socket_t& socket) {
  static std::atomic<int> next{0};
  std::string endpoint = "inproc://colo-ps-monitor-" + std::to_string(::getpid()) + "-" + std::to_string(next++);
  if (zmq_socket_monitor(socket.handle(), endpoint.c_str(), ZMQ_EVENT_DISCONNECTED) != 0) {
    throw std::runtime_error("zmq_socket_monitor failed: " + std::string(zmq_strerror(zmq_errno())));
  }
  zmq::socket_t monitor(transport_context(), zmq::socket_type::pair);
  monitor.connect(endpoint);
  return monitor;
}

// Stops `socket`'s monitor and closes the PAIR socket that read it. Must
// come before `socket` closes: a monitor left running as its socket closes
// stalled the context, and later sockets of the process received nothing
// (libzmq 4.3.4).
void stop_watching(zmq::socket_t& socket, zmq::socket_t& monitor) {
  if (socket.handle() != nullptr) zmq_socket_monitor(socket.handle(), nullptr, 0);
  monitor.close();
}

// Reads every queued event of `monitor`; returns the file descriptor of
// each connection that closed.
std::vector<int> drain_disconnections(zmq::socket_t& monitor) {
  std::vector<int> closed;
  zmq::message_t event;
  while (monitor.recv(event, zmq::recv_flags::dontwait)) {
    uint16_t id = 0;
    uint32_t fd = 0;  // an event's value: for a disconnection, the connection's descriptor
    if (event.size() >= sizeof(id) + sizeof(fd)) {
      std::memcpy(&id, event.data(), sizeof(id));
      std::memcpy(&fd, static_cast<const char*>(event.data()) + sizeof(id), sizeof(fd));
    }
    while (event.more()) {
      zmq::message_t rest;
      if (!monitor.recv(rest, zmq::recv_flags::none)) break;
      event = std::move(rest);
    }
    if (id == ZMQ_EVENT_DISCONNECTED) closed.push_back(static_cast<int>(fd));
  }
  return closed;
}

// Whether `host` is an IPv4 address (ZeroMQ binds those, not host names).
bool is_ipv4_address(const std::string& host) {
  in_addr parsed{};
  return ::inet_pton(AF_INET, host.c_str(), &parsed) == 1;
}

void send_frames(zmq::socket_t& socket, const Message& message) {
  const at::ScalarType type = message.payload.defined() ? message.payload.scalar_type() : at::kFloat;
  const int32_t element =
      type == at::kBFloat16 ? kBFloat16Element : (type == at::kByte ? kByteElement : kFloat32Element);
  Header header{kMagic, static_cast<uint32_t>(message.type), message.worker, element, message.step, message.count,
                message.lr, message.hold_s, message.payload.defined() ? message.payload.numel() : 0};
  socket.send(zmq::buffer(&header, sizeof(header)), zmq::send_flags::sndmore);
  socket.send(zmq::buffer(message.blob), zmq::send_flags::sndmore);
  if (!message.payload.defined()) {
    socket.send(zmq::message_t(), zmq::send_flags::none);
    return;
  }
  if (!message.payload.device().is_cpu() || type != element_type(element) || !message.payload.is_contiguous()) {
    throw std::logic_error("a parameter-server payload must be a contiguous float32, bfloat16 or uint8 CPU tensor");
  }
  // Sent without a copy: the frame holds a reference to the tensor until
  // ZeroMQ's I/O thread has written it.
  auto* kept = new at::Tensor(message.payload);
  zmq::message_t frame(kept->data_ptr(), kept->nbytes(),
                       [](void*, void* hint) { delete static_cast<at::Tensor*>(hint); }, kept);
  socket.send(frame, zmq::send_flags::none);
}

// Reads the header, blob and payload frames that follow on `socket`; puts
// the descriptor of the connection they came over in `source_fd` when given
// (the header's: a ROUTER's routing-id frame carries none).
Message read_frames(zmq::socket_t& socket, at::Tensor* into, const std::string& from, int* source_fd = nullptr) {
  zmq::message_t header_frame, blob_frame, payload_frame;
  bool complete = socket.recv(header_frame, zmq::recv_flags::none) && header_frame.more() &&
                  socket.recv(blob_frame, zmq::recv_flags::none) && blob_frame.more() &&
                  socket.recv(payload_frame, zmq::recv_flags::none) && !payload_frame.more();
  Header header{};
  if (!complete || header_frame.size() != sizeof(header)) {
    throw std::runtime_error("malformed message from " + from);
  }
  std::memcpy(&header, header_frame.data(), sizeof(header));
  if (source_fd != nullptr) *source_fd = zmq_msg_get(header_frame.handle(), ZMQ_SRCFD);
  if (header.magic != kMagic || !known_element(header.element) ||
      header.elements < 0 ||
      payload_frame.size() != static_cast<size_t>(header.elements) * at::elementSize(element_type(header.element))) {
    throw std::runtime_error("malformed message from " + from);
  }
  Message message;
  message.type = static_cast<MessageType>(header.type);
  message.worker = header.worker;
  message.step = header.step;
  message.count = header.count;
  message.lr = header.lr;
  message.hold_s = header.hold_s;
  message.blob.assign(static_cast<const char*>(blob_frame.data()), blob_frame.size());
  if (header.elements == 0) return message;
  const at::ScalarType type = element_type(header.element);
  if (into != nullptr && into->numel() == header.elements && into->scalar_type() == type && into->is_contiguous() &&
      into->is_cpu()) {
    std::memcpy(into->data_ptr(), payload_frame.data(), payload_frame.size());
    message.payload = *into;
    return message;
  }
  auto* held = new zmq::message_t(std::move(payload_frame));
  message.payload = at::from_blob(held->data(), {header.elements}, [held](void*) { delete held; },
                                  at::TensorOptions().dtype(type));
  return message;
}

// Waits up to `timeout_s` (< 0: forever) for `socket` or `monitor` to have
// something; false on timeout.
bool wait_for(zmq::socket_t& socket, zmq::socket_t& monitor, double timeout_s) {
  zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {monitor.handle(), 0, ZMQ_POLLIN, 0}};
  auto ms = std::chrono::milliseconds(timeout_s < 0 ? -1 : static_cast<int64_t>(timeout_s * 1000));
  return zmq::poll(items, 2, ms) > 0;
}

bool has_message(zmq::socket_t& socket) { return (socket.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0; }

}  // namespace

std::string this_host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

struct ServerSocket::Sockets {
  zmq::socket_t router{transport_context(), zmq::socket_type::router};
  zmq::socket_t monitor;
  std::string address;
  int64_t disconnections = 0;
  std::unordered_map<int, int> worker_on;  // connection descriptor -> the worker whose messages it carried
  std::vector<int> closed_workers;
  ~Sockets() { stop_watching(router, monitor); }

  void note_disconnections() {
    for (int fd : drain_disconnections(monitor)) {
      ++disconnections;
      auto known = worker_on.find(fd);
      if (known == worker_on.end()) continue;
      closed_workers.push_back(known->second);
      worker_on.erase(known);
    }
  }
};

ServerSocket::ServerSocket(const std::string& host, std::string name)
    : sockets_(std::make_unique<Sockets>()), name_(std::move(name)) {
  auto& router = sockets_->router;
  router.set(zmq::sockopt::linger, 1000);
  router.set(zmq::sockopt::router_mandatory, 1);  // a reply to a worker that is gone throws
  router.set(zmq::sockopt::router_handover, 1);
  router.set(zmq::sockopt::sndhwm, 0);
  router.set(zmq::sockopt::rcvhwm, 0);
  sockets_->monitor = watch_disconnections(router);
  const bool numeric = is_ipv4_address(host);
  try {
    router.bind("tcp://" + (numeric ? host : std::string("*")) + ":*");
  } catch (const zmq::error_t& e) {
    throw std::runtime_error(name_ + ": cannot listen on " + host + ": " + e.what());
  }
  sockets_->address = router.get(zmq::sockopt::last_endpoint);
  if (!numeric) sockets_->address = "tcp://" + host + sockets_->address.substr(sockets_->address.rfind(':'));
}

ServerSocket::~ServerSocket() = default;

std::string ServerSocket::address() const { return sockets_->address; }

int64_t ServerSocket::disconnections() const { return sockets_->disconnections; }

const std::vector<int>& ServerSocket::closed_workers() const { return sockets_->closed_workers; }

std::optional<Envelope> ServerSocket::receive(double timeout_s, at::Tensor* into) {
  Stopwatch clock;
  auto& router = sockets_->router;
  while (true) {
    if (has_message(router)) {
      zmq::message_t identity;
      if (!router.recv(identity, zmq::recv_flags::dontwait)) continue;
      std::string id(static_cast<const char*>(identity.data()), identity.size());
      if (id.rfind(kWorkerPrefix, 0) != 0) throw std::runtime_error(name_ + ": message from an unknown peer");
      Envelope envelope;
      envelope.worker = std::stoi(id.substr(std::strlen(kWorkerPrefix)));
      int fd = -1;
      envelope.message = read_frames(router, into, "worker " + std::to_string(envelope.worker), &fd);
      if (fd >= 0) sockets_->worker_on[fd] = envelope.worker;
      return envelope;
    }
    sockets_->note_disconnections();
    double left = timeout_s < 0 ? -1 : timeout_s - clock.elapsed_s();
    if (timeout_s >= 0 && left <= 0) return std::nullopt;
    wait_for(router, sockets_->monitor, left < 0 ? 0.5 : std::min(left, 0.5));
  }
}

void ServerSocket::send(int worker, const Message& message) {
  std::string id = kWorkerPrefix + std::to_string(worker);
  try {
    sockets_->router.send(zmq::buffer(id), zmq::send_flags::sndmore);
    send_frames(sockets_->router, message);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error(name_ + ": cannot reach worker " + std::to_string(worker) + ": " + e.what());
  }
}

struct ServerLink::Sockets {
  zmq::socket_t dealer{transport_context(), zmq::socket_type::dealer};
  zmq::socket_t monitor;
  bool disconnected = false;
  ~Sockets() { stop_watching(dealer, monitor); }
};

ServerLink::ServerLink(const std::string& address, int worker, std::string peer)
    : sockets_(std::make_unique<Sockets>()), peer_(std::move(peer)) {
  auto& dealer = sockets_->dealer;
  dealer.set(zmq::sockopt::routing_id, kWorkerPrefix + std::to_string(worker));
  dealer.set(zmq::sockopt::linger, 5000);  // kDone reaches the server after close
  dealer.set(zmq::sockopt::sndhwm, 0);
  dealer.set(zmq::sockopt::rcvhwm, 0);
  sockets_->monitor = watch_disconnections(dealer);
  try {
    dealer.connect(address);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot connect to " + peer_ + " at " + address + ": " + e.what());
  }
}

ServerLink::~ServerLink() = default;
ServerLink::ServerLink(ServerLink&& other) noexcept = default;
ServerLink& ServerLink::operator=(ServerLink&& other) noexcept = default;

void ServerLink::send(const Message& message) {
  if (sockets_->disconnected) throw ServerClosed(peer_ + " closed the connection");
  send_frames(sockets_->dealer, message);
}

bool ServerLink::closed() {
  if (!drain_disconnections(sockets_->monitor).empty()) sockets_->disconnected = true;
  return sockets_->disconnected;
}

Message ServerLink::receive(double timeout_s, at::Tensor* into) {
  Stopwatch clock;
  auto& dealer = sockets_->dealer;
  while (true) {
    if (has_message(dealer)) return read_frames(dealer, into, peer_);
    if (closed()) throw ServerClosed(peer_ + " closed the connection");
    double left = timeout_s - clock.elapsed_s();
    if (left <= 0) {
      throw std::runtime_error(peer_ + " sent nothing for " + std::to_string(timeout_s) + " s");
    }
    wait_for(dealer, sockets_->monitor, std::min(left, 0.5));
  }
}

}  // namespace colo::dist
