#include "colo/dist/run_mps.h"

#include <cstdio>
#include <cstdlib>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/gpu/simulated_device.h"

namespace colo::dist {

RunMpsPlan plan_run_mps(const ClusterSpec& spec, const std::function<std::vector<gpu::DevicePtr>()>& devices,
                        const char* pipe_env) {
  const std::string& mode = spec.param_server.mps;
  if (mode == "off") return {};
  const bool on = mode == "on";
  auto cannot = [&](const std::string& why) {
    if (on) throw InputError(spec.train.source, "param_server.mps", "\"auto\" or \"off\": " + why);
    return RunMpsPlan{};
  };
  if (!spec.uses_servers()) return cannot("strategy \"" + spec.strategy + "\" has no servers to share the GPUs");
  if (spec.train.device == "cpu") return cannot("the ranks train on the CPU");
  bool real_gpu = false;
  for (const auto& device : devices()) real_gpu = real_gpu || gpu::as_simulated(device) == nullptr;
  if (!real_gpu) return cannot("this machine has no GPU (or only simulated ones)");
  if (pipe_env != nullptr && *pipe_env != '\0') {
    return {false, std::string("colo dist: the ranks are clients of the MPS daemon of CUDA_MPS_PIPE_DIRECTORY=") +
                       pipe_env};
  }
  return {true, "colo dist: the ranks run under a private MPS daemon (quit at the end): each server's updates run "
                "beside its GPU's worker instead of by time slices ([param_server] mps = \"off\" to not)"};
}

RunMps::RunMps(const ClusterSpec& spec) {
  RunMpsPlan plan = plan_run_mps(spec, gpu::discover_devices, std::getenv("CUDA_MPS_PIPE_DIRECTORY"));
  if (!plan.start_daemon) {
    if (!plan.note.empty()) std::fprintf(stderr, "%s\n", plan.note.c_str());
    return;
  }
  // A short path of its own: the daemon's pipe is a Unix socket there.
  dir_ = make_unique_directory(temp_directory(), "colo-dist-mps");
  gpu::MpsOptions options;
  options.pipe_dir = dir_ + "/pipe";
  options.log_dir = dir_ + "/log";
  try {
    daemon_ = std::make_unique<gpu::MpsDaemon>(options);
  } catch (const gpu::MpsError& error) {
    remove_tree(dir_);
    dir_.clear();
    if (spec.param_server.mps == "on") throw;
    std::fprintf(stderr, "colo dist: MPS did not start (%s); the servers share the workers' GPUs by time slices\n",
                 error.what());
    return;
  }
  environment_ = daemon_->client_environment(std::nullopt, std::nullopt);
  std::fprintf(stderr, "%s; its pipe: %s\n", plan.note.c_str(), options.pipe_dir.c_str());
}

RunMps::~RunMps() {
  if (daemon_) daemon_->quit();
  daemon_.reset();
  if (!dir_.empty()) remove_tree(dir_);
}

}  // namespace colo::dist
