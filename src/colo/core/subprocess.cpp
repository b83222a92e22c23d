#include "colo/core/subprocess.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "colo/core/process_tree.h"
#include "colo/core/stopwatch.h"

extern char** environ;

namespace colo {
namespace {

// Builds the child's environment: the parent's, with `env` overriding.
std::vector<std::string> merged_environment(const EnvironmentOverrides& env) {
  std::vector<std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string item = *entry;
    std::string name = item.substr(0, item.find('='));
    if (env.count(name) == 0) merged.push_back(item);
  }
  for (const auto& [name, value] : env) merged.push_back(name + "=" + value);
  return merged;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// In the child after fork: exec or report failure through status 127.
[[noreturn]] void exec_child(std::vector<std::string> argv, const EnvironmentOverrides& env) {
  std::vector<std::string> environment = merged_environment(env);
  auto args = c_strings(argv);
  auto envp = c_strings(environment);
  ::execvpe(args[0], args.data(), envp.data());
  std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
  ::_exit(127);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const EnvironmentOverrides& env,
                          const std::string& input, double timeout_s) {
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    // Nobody would read its output or stop it at the timeout: it ends with
    // its parent (a `kill -9` of colo run mid-estimate leaves no estimator).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(137);
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(out_pipe[1], STDERR_FILENO);
    exec_child(argv, env);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  // Small inputs (control commands) fit in the pipe buffer.
  if (!input.empty() && ::write(in_pipe[1], input.data(), input.size()) < 0) { /* child may ignore stdin */ }
  ::close(in_pipe[1]);

  ProcessResult result;
  Stopwatch clock;
  char buffer[4096];
  bool open = true;
  while (open) {
    double left_s = timeout_s - clock.elapsed_s();
    if (left_s <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fd{out_pipe[0], POLLIN, 0};
    int ready = ::poll(&fd, 1, static_cast<int>(std::min(left_s, 0.2) * 1000) + 1);
    if (ready > 0) {
      ssize_t got = ::read(out_pipe[0], buffer, sizeof buffer);
      if (got > 0) {
        result.output.append(buffer, static_cast<size_t>(got));
      } else {
        open = false;
      }
    }
  }
  ::close(out_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const EnvironmentOverrides& env,
                           const std::string& log_path, bool end_with_parent, bool held) {
  if (argv.empty()) throw std::runtime_error("empty command");
  int log_fd = -1;
  if (!log_path.empty()) {
    log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw std::runtime_error("cannot open " + log_path + ": " + std::strerror(errno));
  }
  // A socket, not a pipe: release() to a child already gone must not raise SIGPIPE.
  int hold[2] = {-1, -1};
  if (held && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, hold) != 0) {
    if (log_fd >= 0) ::close(log_fd);
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    int error = errno;
    for (int fd : {log_fd, hold[0], hold[1]}) {
      if (fd >= 0) ::close(fd);
    }
    throw std::runtime_error(std::string("fork: ") + std::strerror(error));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    if (end_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(143);  // the parent died before the request took
    } else {
      // Its group is orphaned when its launcher dies; a stopped member (a
      // job paused by the scheduler) would then get SIGHUP from the kernel.
      ::signal(SIGHUP, SIG_IGN);
    }
    if (held) {
      // Released: one byte. End of file: the parent died or dropped it first.
      ::close(hold[1]);
      char go = 0;
      ssize_t got = -1;
      do got = ::read(hold[0], &go, 1); while (got < 0 && errno == EINTR);
      if (got != 1) ::_exit(125);
      ::close(hold[0]);
    }
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    exec_child(argv, env);
  }
  ::setpgid(pid_, pid_);
  if (log_fd >= 0) ::close(log_fd);
  if (held) {
    ::close(hold[0]);
    hold_fd_ = hold[1];
  }
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), status_(other.status_), hold_fd_(other.hold_fd_) {
  other.pid_ = -1;
  other.hold_fd_ = -1;
}

ChildProcess::~ChildProcess() {
  if (hold_fd_ >= 0) ::close(hold_fd_);
}

void ChildProcess::release() {
  if (hold_fd_ < 0) return;
  const char go = 1;
  ssize_t wrote = -1;
  do wrote = ::send(hold_fd_, &go, 1, MSG_NOSIGNAL); while (wrote < 0 && errno == EINTR);
  ::close(hold_fd_);
  hold_fd_ = -1;
}

std::optional<int> ChildProcess::poll() {
  if (status_ || pid_ < 0) return status_;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
  return status_;
}

int ChildProcess::wait() {
  while (!status_ && pid_ >= 0) {
    int status = 0;
    pid_t got = ::waitpid(pid_, &status, 0);
    if (got == pid_) status_ = status;
    if (got < 0 && errno != EINTR) status_ = 0;
  }
  return status_.value_or(0);
}

void ChildProcess::terminate(double grace_s) {
  if (pid_ < 0 || poll()) return;
  ::kill(-pid_, SIGTERM);
  Stopwatch clock;
  while (!poll() && clock.elapsed_s() < grace_s) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!poll()) {
    ::kill(-pid_, SIGKILL);
    wait();
  }
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  // A zombie (ended, not yet reaped by its parent) counts as gone.
  std::string stat_path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = std::fopen(stat_path.c_str(), "r");
  if (f == nullptr) return true;
  char line[512] = {0};
  size_t got = std::fread(line, 1, sizeof line - 1, f);
  std::fclose(f);
  // "pid (comm) state ...": comm may hold spaces, so look after the last ')'.
  const char* close = std::strrchr(line, ')');
  return !(got > 0 && close != nullptr && close[1] == ' ' && close[2] == 'Z');
}

}  // namespace colo

namespace colo {

int process_group_of(uint32_t pid) { return parent_and_group(pid).second; }

bool is_same_or_descendant(uint32_t pid, uint32_t ancestor) {
  int current = static_cast<int>(pid);
  for (int hops = 0; hops < 64 && current > 1; ++hops) {  // bounded: a pid reused mid-walk cannot loop
    if (current == static_cast<int>(ancestor)) return true;
    current = parent_and_group(static_cast<uint32_t>(current)).first;
  }
  return false;
}

bool belongs_to_job(uint32_t pid, uint32_t leader) {
  return process_group_of(pid) == static_cast<int>(leader) || is_same_or_descendant(pid, leader);
}

bool keep_blas_on_calling_threads() {
  using SetThreads = void (*)(int);
  auto set_threads = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (!set_threads) return false;
  set_threads(1);
  return true;
}

}  // namespace colo
