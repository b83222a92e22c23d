#include "colo/slurm/node_mps.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "colo/core/files.h"

namespace colo::slurm {
namespace {

// flock(2) on DIR/lock for the life of this object.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir) : fd_(::open((dir + "/lock").c_str(), O_RDWR | O_CREAT, 0600)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) throw gpu::MpsError("cannot lock " + dir + "/lock");
  }
  ~DirectoryLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_;
};

// The live pids in DIR/users, with `add` added and `drop` removed; written back.
std::set<int> update_users(const std::string& dir, int add, int drop) {
  std::set<int> users;
  std::ifstream in(dir + "/users");
  int pid = 0;
  while (in >> pid) {
    if (pid != drop && process_alive(pid)) users.insert(pid);
  }
  if (add > 0) users.insert(add);
  std::ofstream out(dir + "/users", std::ios::trunc);
  for (int p : users) out << p << "\n";
  return users;
}

}  // namespace

std::string node_mps_directory(const std::string& root, const std::string& gpus) {
  std::string key;
  for (char c : gpus) key += isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return root + "/gpu-" + (key.empty() ? "all" : key);
}

NodeMps::NodeMps(const std::string& gpus, const std::string& control, const std::string& root)
    : dir_(node_mps_directory(root, gpus)) {
  make_directories(dir_);
  DirectoryLock lock(dir_);
  gpu::MpsOptions options;
  options.control = control;
  options.pipe_dir = dir_ + "/pipe";
  options.log_dir = dir_ + "/log";
  options.visible_devices = gpus;
  options.quit_on_interrupt = false;
  daemon_ = std::make_unique<gpu::MpsDaemon>(options);
  daemon_->leave_running();
  update_users(dir_, static_cast<int>(::getpid()), 0);
  spdlog::info("colo slurm: MPS daemon on GPU(s) {} {} ({})", gpus,
               daemon_->started_here() ? "started" : "joined", options.pipe_dir);
}

NodeMps::~NodeMps() {
  try {
    DirectoryLock lock(dir_);
    if (update_users(dir_, 0, static_cast<int>(::getpid())).empty()) {
      daemon_->command("quit");
      spdlog::info("colo slurm: last job on this MPS daemon; asked it to quit");
    }
  } catch (const std::exception& e) {
    spdlog::warn("colo slurm: leaving the MPS daemon in {}: {}", dir_, e.what());
  }
}

EnvironmentOverrides NodeMps::client_environment(std::optional<int64_t> mem_limit_bytes, int gpu_count) const {
  std::vector<int> ordinals;
  std::ostringstream visible;
  for (int i = 0; i < gpu_count; ++i) {
    ordinals.push_back(i);
    visible << (i ? "," : "") << i;
  }
  EnvironmentOverrides env = daemon_->client_environment(std::nullopt, mem_limit_bytes, ordinals);
  env["CUDA_VISIBLE_DEVICES"] = visible.str();
  return env;
}

}  // namespace colo::slurm
