#pragma once
// The MPS daemon of the GPUs one Slurm allocation got, shared by every colo
// job of this user on them: the first job starts it, later jobs join it,
// the last to leave quits it.
//
// Under proctrack/cgroup, Slurm kills the daemon with the job that started
// it; there, start MPS from the node's Prolog instead (docs/slurm.md).

#include <memory>
#include <optional>
#include <string>

#include "colo/core/subprocess.h"
#include "colo/gpu/mps.h"

namespace colo::slurm {

class NodeMps {
 public:
  // Joins or starts the daemon for `gpus` (CUDA_VISIBLE_DEVICES as Slurm set
  // it, "1" or "0,1") under `root` (one directory per GPU set). Throws
  // gpu::MpsError when the daemon cannot be started.
  NodeMps(const std::string& gpus, const std::string& control, const std::string& root);
  // Leaves; quits the daemon when no other live colo job uses it.
  ~NodeMps();
  NodeMps(const NodeMps&) = delete;
  NodeMps& operator=(const NodeMps&) = delete;

  // The client's environment: the pipe directory, its devices renumbered
  // from 0 (the daemon sees only these GPUs) and the pinned-memory limit
  // on each.
  EnvironmentOverrides client_environment(std::optional<int64_t> mem_limit_bytes, int gpu_count) const;
  const std::string& directory() const { return dir_; }

 private:
  std::string dir_;
  std::unique_ptr<gpu::MpsDaemon> daemon_;
};

// The directory of the daemon for `gpus` under `root`.
std::string node_mps_directory(const std::string& root, const std::string& gpus);

}  // namespace colo::slurm
