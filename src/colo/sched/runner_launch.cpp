// How the runner starts a job: its environment (status and progress files,
// its shared loader, its GPUs, MPS's limits), its process held until the
// store says it runs, and the MPS daemon its jobs and producers are clients of.

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "colo/core/files.h"
#include "colo/core/loader_start_group.h"
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"
#include "colo/core/table.h"
#include "colo/gpu/simulated_device.h"
#include "colo/sched/mps_limit.h"
#include "colo/sched/runner.h"

namespace colo::sched {

gpu::MpsDaemon* Runner::mps() {
  if (mps_) return mps_.get();
  gpu::MpsOptions options;
  options.control = options_.mps_control;
  std::string dir = options_.mps_dir.empty() ? options_.log_dir + "/mps" : options_.mps_dir;
  options.pipe_dir = dir + "/pipe";
  options.log_dir = dir + "/log";
  options.quit_on_interrupt = false;  // stop_all() quits it; detach() leaves it to the jobs
  for (size_t g = 0; g < devices_.size(); ++g) {
    const std::string& uuid = devices_[g]->info().uuid;
    options.visible_devices += (g ? "," : "") + (uuid.empty() ? std::to_string(devices_[g]->info().index) : uuid);
  }
  mps_ = std::make_unique<gpu::MpsDaemon>(options);
  return mps_.get();
}

// Under MPS a producer is a client of the runner's daemon, as its jobs are:
// a process outside MPS shares the GPU with the daemon by time slices, so
// its copies would not run beside the jobs' kernels, and its device ring
// would be mapped across that divide. It sees every GPU of the runner by
// its ordinal among the daemon's, as a job sees its own: `device =
// "cuda:K"` in DATA.toml is the runner's K-th GPU either way. Otherwise it
// inherits this process's environment.
EnvironmentOverrides Runner::producer_environment() {
  if (!has_gpus_ || options_.mode != CollocationMode::kMps || gpu::as_simulated(devices_.front()) != nullptr) return {};
  EnvironmentOverrides env = mps()->client_environment(std::nullopt, std::nullopt, {});
  std::string ordinals;
  for (size_t g = 0; g < devices_.size(); ++g) ordinals += (g ? "," : "") + std::to_string(g);
  env["CUDA_VISIBLE_DEVICES"] = ordinals;
  return env;
}

Launch Runner::launch(int64_t id, const std::vector<int>& gpus, const JobRequest& request) {
  const RoundJob& round_job = round_jobs_.at(id);
  const JobRecord& job = *round_job.record;
  EnvironmentOverrides env(job.spec.env.begin(), job.spec.env.end());
  std::string start_group;  // the start group it joins, if launched
  env[kJobIdVariable] = std::to_string(job.id);
  env["COLO_JOB_STATUS_FILE"] = status_path(job.id);
  env[kProgressFileVariable] = progress_path(job.id);
  remove_tree(progress_path(job.id));  // an earlier attempt's
  if (!job.spec.loader.empty()) {
    try {
      loaders_->acquire(job.spec.loader, job.id, producer_environment());
    } catch (const std::exception& e) {
      return Launch::waits("cannot start its shared loader for " + job.spec.loader + ": " + e.what());
    }
    // It keeps its producer while it waits: released if it leaves the queue meanwhile.
    if (!loaders_->ready(job.spec.loader)) {
      waiting_for_loader_.insert(job.id);
      return Launch::waits("waiting for its shared loader (" + job.spec.loader + ") to fill its ring");
    }
    waiting_for_loader_.erase(job.id);
    // Launched, it would only find no producer: it fails now, with the producer's reason.
    if (std::string failure = loaders_->failure(job.spec.loader); !failure.empty()) {
      loaders_->release(job.id);
      std::string reason = "its shared loader (" + job.spec.loader + ") exited before filling its ring: " + failure;
      store_.fail_waiting(job.id, reason);
      spdlog::warn("job {} failed: {}", job.id, reason);
      return Launch::gone();
    }
    env[kLoaderVariable] = job.spec.loader;
    start_group = loaders_->start_group_of(job.spec.loader);
    if (!start_group.empty()) env[kLoaderStartGroupVariable] = start_group;
  }
  std::optional<int64_t> mem_limit;
  if (has_gpus_) {
    std::string visible, ordinals;
    for (int g : gpus) {
      const std::string& uuid = devices_[g]->info().uuid;
      visible += (visible.empty() ? "" : ",") + (uuid.empty() ? std::to_string(devices_[g]->info().index) : uuid);
      ordinals += (ordinals.empty() ? "" : ",") + std::to_string(g);
    }
    env["CUDA_VISIBLE_DEVICES"] = visible;
    bool simulated = gpu::as_simulated(devices_[gpus.front()]) != nullptr;
    if (options_.mode == CollocationMode::kMps && !simulated) {
      std::optional<int> percentage;
      if (job.spec.sm_share) percentage = std::clamp(static_cast<int>(std::ceil(*job.spec.sm_share * 100)), 1, 100);
      if (options_.mps_memory_limits) mem_limit = mps_memory_limit(request, options_.thresholds);
      for (const auto& [k, v] : mps()->client_environment(percentage, mem_limit, gpus)) env[k] = v;
      env["CUDA_VISIBLE_DEVICES"] = ordinals;  // ordinals among the daemon's GPUs (all of this runner's)
    }
  } else {
    env["CUDA_VISIBLE_DEVICES"] = "";
  }
  std::vector<std::string> argv{"/bin/sh", "-c",
                                "cd \"$0\" || exit 97; \"$@\"; code=$?; echo $code > \"$COLO_JOB_STATUS_FILE\"; exit $code",
                                job.spec.workdir};
  argv.insert(argv.end(), job.spec.command.begin(), job.spec.command.end());
  remove_tree(status_path(job.id));
  // Held until the store says RUNNING with its pid: should this process
  // die in between, it exits unrun, and the job, still waiting, runs once.
  auto child =
      std::make_unique<ChildProcess>(argv, env, log_path(job.id), /*end_with_parent=*/false, /*held=*/true);
  if (!store_.mark_running(job.id, gpus, child->pid(), log_path(job.id))) {
    child->terminate(5.0);  // cancelled meanwhile
    loaders_->release(job.id);
    return Launch::gone();
  }
  child->release();
  if (!start_group.empty()) loaders_->joined_start_group(job.spec.loader, job.id);  // launched: the group waits for it
  Active a;
  a.id = job.id;
  a.gpus = gpus;
  a.pgid = child->pid();
  a.child = std::move(child);
  a.request = request;
  a.mem_limit = mem_limit;
  a.learned_alone = scheduler_.history().alone_rate(job_keys(job.spec));
  if (round_job.estimate_pending) a.awaits_estimate = job.spec;
  account_on_simulated(a);
  const int64_t shows = shows_at_once(a);
  active_.push_back(std::move(a));
  std::string where;
  for (int g : gpus) where += (where.empty() ? "" : ",") + std::to_string(g);
  spdlog::info("job {} ({}) started {} {}{}", job.id, job.spec.name, has_gpus_ ? "on GPU" : "without a GPU, slot", where,
               std::string(request.sm_share > 0 ? "" : " (SM share unknown: settling)") +
                   (request.provisional ? " (memory unknown: reserves " + bytes_human(double(*request.mem_bytes)) +
                                              " until its peak is measured)"
                                        : ""));
  return Launch::started(shows);
}

}  // namespace colo::sched
