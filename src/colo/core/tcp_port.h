#pragma once
// Finding a TCP port no program listens on.

namespace colo {

// A free TCP port on this host's loopback address (bound and released; racy
// only against other programs grabbing ports at the same instant). Throws
// std::runtime_error when no socket can be bound.
int free_tcp_port();

}  // namespace colo
