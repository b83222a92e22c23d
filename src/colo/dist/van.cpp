#include "colo/dist/van.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <ATen/ATen.h>

#include "colo/core/stopwatch.h"

namespace colo::dist {
namespace {

constexpr uint32_t kMagic = 0x636f6c6f;  // "colo"

struct Header {
  uint32_t magic;
  uint32_t type;
  int32_t worker;
  int32_t unused;
  int64_t step;
  double lr;
  double hold_s;
  int64_t floats;
};

int poll_timeout_ms(double timeout_s) { return timeout_s < 0 ? -1 : static_cast<int>(timeout_s * 1000); }

}  // namespace

Connection::Connection(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Connection::Connection(Connection&& other) noexcept : fd_(other.fd_), peer_(std::move(other.peer_)) {
  other.fd_ = -1;
}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    peer_ = std::move(other.peer_);
    other.fd_ = -1;
  }
  return *this;
}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);
}

void Connection::write_all(const void* data, size_t bytes) {
  const char* at = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd_, at, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("lost the connection to " + peer_ + " (" + std::strerror(errno) + ")");
    at += n;
    bytes -= static_cast<size_t>(n);
  }
}

void Connection::read_all(void* data, size_t bytes, double timeout_s) {
  char* at = static_cast<char*>(data);
  Stopwatch clock;
  while (bytes > 0) {
    double left = timeout_s < 0 ? -1 : timeout_s - clock.elapsed_s();
    if (timeout_s >= 0 && left <= 0) {
      throw std::runtime_error("no message from " + peer_ + " within " + std::to_string(timeout_s) + " s");
    }
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, poll_timeout_ms(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    ssize_t n = ::recv(fd_, at, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw std::runtime_error(peer_ + " closed the connection (did it die?)");
    if (n < 0) throw std::runtime_error("lost the connection to " + peer_ + " (" + std::strerror(errno) + ")");
    at += n;
    bytes -= static_cast<size_t>(n);
  }
}

void Connection::send(const Message& message) {
  at::Tensor payload = message.payload.defined() ? message.payload.contiguous() : at::Tensor();
  Header header{kMagic, static_cast<uint32_t>(message.type), message.worker, 0, message.step,
                message.lr, message.hold_s, payload.defined() ? payload.numel() : 0};
  write_all(&header, sizeof(header));
  if (header.floats > 0) write_all(payload.data_ptr<float>(), static_cast<size_t>(header.floats) * 4);
}

Message Connection::receive(double timeout_s, at::Tensor* into) {
  Header header{};
  read_all(&header, sizeof(header), timeout_s);
  if (header.magic != kMagic || header.floats < 0) {
    throw std::runtime_error("garbled message from " + peer_ + " (not a colo parameter-server peer?)");
  }
  Message message;
  message.type = static_cast<MessageType>(header.type);
  message.worker = header.worker;
  message.step = header.step;
  message.lr = header.lr;
  message.hold_s = header.hold_s;
  if (header.floats > 0) {
    if (into && into->numel() >= header.floats) {
      message.payload = into->view({-1}).narrow(0, 0, header.floats);
    } else {
      message.payload = at::empty({header.floats}, at::kFloat);
    }
    read_all(message.payload.data_ptr<float>(), static_cast<size_t>(header.floats) * 4, timeout_s);
  }
  return message;
}

Connection connect_to(const std::string& address, double timeout_s, const std::string& peer) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("bad server address \"" + address + "\"");
  std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  Stopwatch clock;
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) == 0) {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      bool ok = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0;
      ::freeaddrinfo(found);
      if (ok) return Connection(fd, peer);
      if (fd >= 0) ::close(fd);
    }
    if (clock.elapsed_s() > timeout_s) {
      throw std::runtime_error("cannot connect to " + peer + " at " + address + " within " +
                               std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Listener::Listener(const std::string& host) : host_(host) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) throw std::runtime_error("cannot open a listening socket");
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd_, 128) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error(std::string("cannot listen for parameter-server peers: ") + std::strerror(errno));
  }
  port_ = ntohs(address.sin_port);
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

std::string Listener::address() const { return host_ + ":" + std::to_string(port_); }

Connection Listener::accept(double timeout_s, const std::string& peer) {
  pollfd p{fd_, POLLIN, 0};
  int ready = ::poll(&p, 1, poll_timeout_ms(timeout_s));
  if (ready <= 0) throw std::runtime_error("no " + peer + " connected within " + std::to_string(timeout_s) + " s");
  int fd = ::accept(fd_, nullptr, nullptr);
  if (fd < 0) throw std::runtime_error(std::string("accept failed: ") + std::strerror(errno));
  return Connection(fd, peer);
}

int wait_readable(const std::vector<int>& sockets, double timeout_s) {
  std::vector<pollfd> fds;
  for (int fd : sockets) fds.push_back(pollfd{fd, POLLIN, 0});
  while (true) {
    int ready = ::poll(fds.data(), fds.size(), poll_timeout_ms(timeout_s));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return -1;
    // Start the scan where the last one stopped, so no peer starves another.
    static thread_local size_t start = 0;
    for (size_t k = 0; k < fds.size(); ++k) {
      size_t i = (start + k) % fds.size();
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        start = i + 1;
        return static_cast<int>(i);
      }
    }
  }
}

}  // namespace colo::dist
