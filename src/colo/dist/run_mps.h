#pragma once
// Whether `colo dist` runs its ranks as clients of a private MPS daemon. A
// parameter server holds its key range on a worker's GPU; without MPS the
// two processes take turns on that GPU by time slices, and every update
// and reply of the server waits for its turn. Under MPS its kernels run
// beside the worker's (on one H200: 0.54 -> 0.13 ms replying a push,
// bench/results/dist/ps/mps_one_gpu/).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "colo/core/subprocess.h"
#include "colo/dist/cluster_spec.h"
#include "colo/gpu/device.h"
#include "colo/gpu/mps.h"

namespace colo::dist {

// What to do about MPS for a run, and the line that says so (empty when
// there is nothing to say).
struct RunMpsPlan {
  bool start_daemon = false;
  std::string note;
};

// [param_server] mps for `spec`, given the machine's GPUs (`devices`, called
// only when the spec leaves it to them: gpu::discover_devices) and
// CUDA_MPS_PIPE_DIRECTORY (`pipe_env`, null when unset): no daemon with "off", without servers, for ranks on the CPU, on
// simulated GPUs or none, or where the environment names a daemon already
// (the ranks use that one). Otherwise a daemon is to be started. With
// "on", a run that cannot have MPS (no servers, the CPU, no real GPU)
// throws InputError naming param_server.mps.
RunMpsPlan plan_run_mps(const ClusterSpec& spec, const std::function<std::vector<gpu::DevicePtr>()>& devices,
                        const char* pipe_env);

// The MPS daemon of one run, by plan_run_mps on this machine: started in a
// private directory, quit (and the directory removed) when this goes.
// With "auto", a daemon that does not start is said on stderr and the run
// goes on by time slices; with "on" the constructor throws its MpsError.
class RunMps {
 public:
  explicit RunMps(const ClusterSpec& spec);
  ~RunMps();
  RunMps(const RunMps&) = delete;
  RunMps& operator=(const RunMps&) = delete;

  // What every rank's environment needs to be a client (empty without a daemon).
  const EnvironmentOverrides& environment() const { return environment_; }
  bool active() const { return daemon_ != nullptr; }

 private:
  std::string dir_;
  std::unique_ptr<gpu::MpsDaemon> daemon_;
  EnvironmentOverrides environment_;
};

}  // namespace colo::dist
