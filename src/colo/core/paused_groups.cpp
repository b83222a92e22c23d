#include "colo/core/paused_groups.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace colo {
namespace {

// The watchdog, after fork(): only async-signal-safe calls. It waits for
// the parent's byte (resumed: nothing to do), or for the socket's end without
// one (the parent died) or the limit, and then continues the groups.
constexpr int kIgnoredByTheWatchdog[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

// The watchdog's signals, blocked from before fork() until it ignores them:
// a Ctrl-C that comes as the groups stop (just after fork) is then never
// the default's, which would end the watchdog and leave them stopped.
sigset_t watchdog_signals() {
  sigset_t set;
  ::sigemptyset(&set);
  for (int sig : kIgnoredByTheWatchdog) ::sigaddset(&set, sig);
  return set;
}

[[noreturn]] void watch(int read_fd, const pid_t* targets, size_t count, int limit_ms, long open_max,
                        const sigset_t* blocked) {
  // colo's own handlers (interrupt_cleanup.h) are not this process's: a
  // Ctrl-C or a SIGTERM to colo's process group leaves it to its duty.
  // Ignored first, then unblocked: one that came meanwhile is discarded.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : kIgnoredByTheWatchdog) ::sigaction(sig, &ignore, nullptr);
  ::sigprocmask(SIG_UNBLOCK, blocked, nullptr);
  for (long fd = 3; fd < open_max; ++fd) {
    if (fd != read_fd) ::close(static_cast<int>(fd));
  }
  pollfd p{read_fd, POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&p, 1, limit_ms);
  } while (ready < 0 && errno == EINTR);
  char byte = 0;
  if (ready > 0 && ::read(read_fd, &byte, 1) == 1) ::_exit(0);
  for (size_t k = 0; k < count; ++k) ::kill(targets[k], SIGCONT);
  ::_exit(0);
}

}  // namespace

PausedGroups::PausedGroups(std::vector<pid_t> pgids, double limit_s, const std::vector<pid_t>& pids) {
  for (pid_t g : pgids) {
    if (g > 0) targets_.push_back(-g);  // never 0: kill(0) is the caller's own group
  }
  for (pid_t p : pids) {
    if (p > 0) targets_.push_back(p);
  }
  int fds[2];
  // A socket pair, not a pipe: the byte is sent with MSG_NOSIGNAL, so a
  // watchdog that has already given up costs no SIGPIPE.
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error(std::string("cannot pause jobs: socketpair: ") + std::strerror(errno));
  }
  const long open_max = std::min(::sysconf(_SC_OPEN_MAX), 65536L);
  const int limit_ms = static_cast<int>(std::max(limit_s, 0.0) * 1000);
  const sigset_t blocked = watchdog_signals();
  sigset_t previous;
  ::pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  pid_t pid = ::fork();
  if (pid == 0) watch(fds[0], targets_.data(), targets_.size(), limit_ms, open_max, &blocked);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("cannot pause jobs: fork: ") + std::strerror(err));
  }
  ::close(fds[0]);
  dismiss_fd_ = fds[1];
  watchdog_ = pid;
  for (pid_t target : targets_) ::kill(target, SIGSTOP);
}

void PausedGroups::resume() {
  if (watchdog_ < 0) return;
  for (pid_t target : targets_) ::kill(target, SIGCONT);
  char byte = 1;
  ssize_t written;
  do {
    written = ::send(dismiss_fd_, &byte, 1, MSG_NOSIGNAL);
  } while (written < 0 && errno == EINTR);
  ::close(dismiss_fd_);
  ::waitpid(watchdog_, nullptr, 0);  // it exits at once: on the byte, or (had the write failed) at the socket's end
  watchdog_ = -1;
  dismiss_fd_ = -1;
}

PausedGroups::~PausedGroups() { resume(); }

}  // namespace colo
