#include "colo/core/interrupt_cleanup.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace colo {
namespace {

std::mutex cleanup_mutex;
std::map<int, std::function<void()>> cleanups;
int next_id = 1;
int signal_pipe[2] = {-1, -1};
std::atomic<bool> interrupting{false};
std::thread::id watcher;

std::atomic<pid_t> sender{0};

void on_signal(int signo, siginfo_t* info, void*) {
  sender = info != nullptr ? info->si_pid : 0;
  unsigned char byte = static_cast<unsigned char>(signo);
  if (::write(signal_pipe[1], &byte, 1) < 0) { /* nothing safe to do here */ }
}

// "pid N (name)" of the process that sent the signal, as /proc shows it.
std::string describe_sender(pid_t pid) {
  if (pid <= 0) return "the kernel or an unknown sender";
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  if (pid == ::getpid()) name = "this process";
  return "pid " + std::to_string(pid) + (name.empty() ? " (gone)" : " (" + name + ")");
}

void watch_signals() {
  unsigned char byte = 0;
  while (::read(signal_pipe[0], &byte, 1) != 1) {
  }
  interrupting = true;
  // Who stopped colo is what a user (or a log) needs when it was not them.
  std::fprintf(stderr, "colo: %s from %s: stopping\n", ::strsignal(byte), describe_sender(sender.load()).c_str());
  std::vector<std::function<void()>> pending;
  {
    std::lock_guard<std::mutex> lock(cleanup_mutex);
    for (auto it = cleanups.rbegin(); it != cleanups.rend(); ++it) pending.push_back(it->second);
    cleanups.clear();
  }
  for (auto& cleanup : pending) {
    try {
      cleanup();
    } catch (...) {
    }
  }
  ::signal(byte, SIG_DFL);
  ::raise(byte);
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Close-on-exec: the processes colo starts must not hold the watcher's pipe.
    if (::pipe2(signal_pipe, O_CLOEXEC) != 0) return;
    std::thread watching(watch_signals);
    watcher = watching.get_id();
    watching.detach();
    struct sigaction action {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
  });
}

}  // namespace

int add_interrupt_cleanup(std::function<void()> cleanup) {
  install_once();
  std::lock_guard<std::mutex> lock(cleanup_mutex);
  int id = next_id++;
  cleanups[id] = std::move(cleanup);
  return id;
}

void remove_interrupt_cleanup(int id) {
  // The cleanups are running: the process ends by the signal once they are
  // done; a caller going on would race them (and exit as if not interrupted).
  while (interrupting && std::this_thread::get_id() != watcher) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::lock_guard<std::mutex> lock(cleanup_mutex);
  cleanups.erase(id);
}

}  // namespace colo
