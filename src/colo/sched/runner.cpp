#include "colo/sched/runner.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/gpu/energy.h"
#include "colo/gpu/simulated_device.h"
#include "colo/core/stopwatch.h"
#include "colo/sched/mps_limit.h"
#include "colo/sched/oom.h"

namespace colo::sched {
namespace {

constexpr double kDefaultShare = 0.5;

std::string tail_of(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - static_cast<std::streamoff>(bytes)));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::optional<int> read_status(const std::string& path) {
  std::ifstream in(path);
  int code = 0;
  if (in >> code) return code;
  return std::nullopt;
}

// Process group of a pid, from /proc/<pid>/stat (after the ") state ppid" part).
int process_group_of(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  char state = 0;
  int ppid = 0, pgrp = -1;
  rest >> state >> ppid >> pgrp;
  return pgrp;
}

}  // namespace

Runner::Runner(JobStore& store, std::vector<gpu::DevicePtr> devices, RunnerOptions options)
    : store_(store), devices_(std::move(devices)), has_gpus_(!devices_.empty()), options_(std::move(options)),
      policy_(make_policy(options_.policy, options_.thresholds)) {
  if (!has_gpus_) {
    gpu::SimulatedGpuSpec cpu;
    cpu.name = "no GPU";
    devices_.push_back(std::make_shared<gpu::SimulatedDevice>(0, cpu));
    options_.mode = CollocationMode::kExclusive;  // one job at a time
  }
  if (options_.log_dir.empty()) options_.log_dir = store_.path() + ".logs";
  std::string error = make_directories(options_.log_dir);
  if (!error.empty()) throw InputError(options_.log_dir, "", "cannot create the job log directory: " + error);
}

Runner::~Runner() = default;

std::string Runner::log_path(int64_t id) const { return options_.log_dir + "/job-" + std::to_string(id) + ".log"; }
std::string Runner::status_path(int64_t id) const {
  return options_.log_dir + "/job-" + std::to_string(id) + ".status";
}

JobRequest Runner::request_for(const JobRecord& job) const {
  JobRequest request{job.id, job.spec.mem_bytes, job.spec.sm_share.value_or(0), false, 0};
  if (job.state == JobState::kOutOfMemory && job.oom_deaths > 0) {
    request = recovery_request(request, options_.recovery, job.oom_deaths, job.peak_mem_bytes.value_or(0));
  }
  return request;
}

void Runner::recover() {
  for (const auto& job : store_.list({JobState::kRunning})) {
    if (job.pid > 0 && process_alive(job.pid)) {
      Active a;
      a.id = job.id;
      a.gpu = job.gpu;
      a.pgid = job.pid;
      a.request = request_for(job);
      account_on_simulated(a);
      active_.push_back(std::move(a));
      spdlog::info("job {} adopted (process group {} still running)", job.id, job.pid);
    } else if (auto code = read_status(status_path(job.id))) {
      Active a;
      a.id = job.id;
      a.gpu = job.gpu;
      settle(a, *code);
    } else {
      store_.mark_requeued(job.id, "its process was lost while colo was down");
      spdlog::warn("job {} requeued: its process was lost", job.id);
    }
  }
}

static gpu::SimulatedDevice* simulated_device(const gpu::DevicePtr& device) {
  return dynamic_cast<gpu::SimulatedDevice*>(device.get());
}

void Runner::account_on_simulated(const Active& job) {
  if (!has_gpus_) return;
  if (auto* sim = simulated_device(devices_[job.gpu])) {
    double share = job.request.sm_share > 0 ? job.request.sm_share : kDefaultShare;
    sim->place(job.id, {static_cast<uint32_t>(job.pgid), job.request.mem_bytes.value_or(0), share});
  }
}

void Runner::release_on_simulated(const Active& job) {
  if (!has_gpus_) return;
  if (auto* sim = simulated_device(devices_[job.gpu])) sim->remove(job.id);
}

void Runner::observe_devices() {
  // Simulated GPUs follow the wall clock while real jobs run on them.
  double now = clock_.elapsed_s();
  double dt = last_observed_s_ < 0 ? 0 : now - last_observed_s_;
  last_observed_s_ = now;
  for (size_t g = 0; g < devices_.size(); ++g) {
    gpu::SimulatedDevice* sim = simulated_device(devices_[g]);
    if (sim != nullptr && has_gpus_) sim->advance(dt);
    gpu::DeviceSample sample = devices_[g]->sample();
    auto previous = last_sample_.find(static_cast<int>(g));
    // The device's energy since the last round: the energy counter's
    // difference where the driver has one, else integrated power; split
    // among its jobs by SM share below.
    double energy = 0;
    if (previous != last_sample_.end()) {
      energy = gpu::energy_between({previous->second, sample}, previous->second.time_s, sample.time_s).energy_j;
    }
    last_sample_[static_cast<int>(g)] = sample;
    if (!has_gpus_) continue;
    std::vector<gpu::ProcessUsage> processes = devices_[g]->processes();
    double shares = 0;
    for (auto& a : active_) {
      if (a.gpu != static_cast<int>(g)) continue;
      shares += a.request.sm_share > 0 ? a.request.sm_share : kDefaultShare;
      // A simulated GPU reports what colo placed on it, not what a job used:
      // no peak is recorded, so history never learns an estimate back.
      if (sim != nullptr) continue;
      int64_t used = 0;
      for (const auto& p : processes) {
        if (process_group_of(p.pid) == a.pgid) used += p.used_mem_bytes;
      }
      a.peak_bytes = std::max(a.peak_bytes, used);
    }
    for (auto& a : active_) {
      if (a.gpu == static_cast<int>(g) && shares > 0) {
        a.energy_j += energy * (a.request.sm_share > 0 ? a.request.sm_share : kDefaultShare) / shares;
      }
    }
  }
}

std::vector<GpuView> Runner::views() const {
  std::vector<GpuView> out;
  for (size_t g = 0; g < devices_.size(); ++g) {
    GpuView v;
    v.index = static_cast<int>(g);
    v.mem_total_bytes = devices_[g]->info().mem_total_bytes;
    int64_t reserved = 0;
    double shares = 0;
    for (const auto& a : active_) {
      if (a.gpu != v.index) continue;
      ++v.jobs;
      int64_t reservation = a.request.mem_bytes ? *a.request.mem_bytes + options_.thresholds.mem_margin_bytes : 0;
      reserved += std::max(reservation, a.peak_bytes);
      shares += a.request.sm_share > 0 ? a.request.sm_share : kDefaultShare;
      if (a.request.must_run_alone) v.held_exclusively = true;
    }
    if (options_.mode == CollocationMode::kExclusive && v.jobs > 0) v.held_exclusively = true;
    v.mem_free_bytes = v.mem_total_bytes - reserved;
    auto sample = last_sample_.find(v.index);
    double measured = 0;
    if (sample != last_sample_.end()) {
      const auto& s = sample->second;
      if (has_gpus_) v.mem_free_bytes = std::min(v.mem_free_bytes, s.mem_free_bytes);
      measured = s.sm_active.value_or(s.gpu_util.value_or(0));
    }
    v.sm_activity = std::max(measured, std::min(1.0, shares));
    out.push_back(v);
  }
  return out;
}

gpu::MpsDaemon* Runner::mps_for(int gpu) {
  auto it = mps_.find(gpu);
  if (it != mps_.end()) return it->second.get();
  gpu::MpsOptions options;
  options.control = options_.mps_control;
  std::string dir = (options_.mps_dir.empty() ? options_.log_dir + "/mps" : options_.mps_dir) + "/gpu" +
                    std::to_string(gpu);
  options.pipe_dir = dir + "/pipe";
  options.log_dir = dir + "/log";
  options.visible_devices = std::to_string(gpu);
  auto daemon = std::make_unique<gpu::MpsDaemon>(options);
  gpu::MpsDaemon* raw = daemon.get();
  mps_[gpu] = std::move(daemon);
  return raw;
}

bool Runner::start(const JobRecord& job) {
  JobRequest request = request_for(job);
  std::optional<int> g = pick_gpu(*policy_, request, views());
  if (!g) return false;
  EnvironmentOverrides env(job.spec.env.begin(), job.spec.env.end());
  env["COLO_JOB_ID"] = std::to_string(job.id);
  env["COLO_JOB_STATUS_FILE"] = status_path(job.id);
  if (has_gpus_) {
    env["CUDA_VISIBLE_DEVICES"] = devices_[*g]->info().uuid.empty() ? std::to_string(*g) : devices_[*g]->info().uuid;
    bool simulated = dynamic_cast<gpu::SimulatedDevice*>(devices_[*g].get()) != nullptr;
    if (options_.mode == CollocationMode::kMps && !simulated) {
      std::optional<int> percentage;
      if (request.sm_share > 0) percentage = std::clamp(static_cast<int>(std::ceil(request.sm_share * 100)), 1, 100);
      std::optional<int64_t> limit;
      if (options_.mps_memory_limits) limit = mps_memory_limit(request, options_.thresholds);
      for (const auto& [k, v] : mps_for(*g)->client_environment(percentage, limit)) env[k] = v;
      env["CUDA_VISIBLE_DEVICES"] = "0";  // the daemon exposes only its own GPU
    }
  } else {
    env["CUDA_VISIBLE_DEVICES"] = "";
  }
  std::vector<std::string> argv{"/bin/sh", "-c",
                                "cd \"$0\" || exit 97; \"$@\"; code=$?; echo $code > \"$COLO_JOB_STATUS_FILE\"; exit $code",
                                job.spec.workdir};
  argv.insert(argv.end(), job.spec.command.begin(), job.spec.command.end());
  remove_tree(status_path(job.id));
  auto child = std::make_unique<ChildProcess>(argv, env, log_path(job.id));
  if (!store_.mark_running(job.id, *g, child->pid(), log_path(job.id))) {
    child->terminate(5.0);  // cancelled meanwhile
    return false;
  }
  Active a;
  a.id = job.id;
  a.gpu = *g;
  a.pgid = child->pid();
  a.child = std::move(child);
  a.request = request;
  account_on_simulated(a);
  active_.push_back(std::move(a));
  spdlog::info("job {} ({}) started on GPU {}", job.id, job.spec.name, *g);
  return true;
}

void Runner::settle(Active& job, int exit_code) {
  release_on_simulated(job);
  std::string log = tail_of(log_path(job.id), 16384);
  ExitKind kind = classify_exit(exit_code, log);
  std::optional<int64_t> peak = job.peak_bytes > 0 ? std::optional<int64_t>(job.peak_bytes) : std::nullopt;
  if (kind == ExitKind::kSuccess) {
    store_.mark_finished(job.id, JobState::kCompleted, exit_code, "", peak, job.energy_j);
  } else if (kind == ExitKind::kFailure) {
    store_.mark_finished(job.id, JobState::kFailed, exit_code, "exit status " + std::to_string(exit_code), peak,
                         job.energy_j);
  } else {
    auto record = store_.get(job.id);
    int deaths = record ? record->oom_deaths + 1 : 1;
    if (deaths > options_.recovery.max_retries) {
      store_.mark_finished(job.id, JobState::kFailed, exit_code,
                           "GPU out of memory " + std::to_string(deaths) + " times; retry limit reached", peak,
                           job.energy_j);
    } else {
      store_.mark_finished(job.id, JobState::kOutOfMemory, exit_code, "GPU out of memory; will retry", peak,
                           job.energy_j);
    }
    spdlog::warn("job {} died of GPU out-of-memory (death {})", job.id, deaths);
  }
}

size_t Runner::step() {
  observe_devices();
  // Jobs cancelled in the store (by `colo cancel`, from any process) stop here.
  for (const auto& job : store_.list({JobState::kCancelled})) {
    for (auto& a : active_) {
      if (a.id != job.id || a.pgid == 0) continue;
      if (a.child) {
        a.child->terminate(5.0);
      } else {
        ::kill(-a.pgid, SIGKILL);
      }
      release_on_simulated(a);
      a.pgid = 0;
    }
  }
  active_.erase(std::remove_if(active_.begin(), active_.end(), [](const Active& a) { return a.pgid == 0; }),
                active_.end());
  for (auto it = active_.begin(); it != active_.end();) {
    std::optional<int> code;
    if (it->child) {
      if (auto status = it->child->poll()) code = exit_code_of(*status);
    } else if (!process_alive(it->pgid)) {
      code = read_status(status_path(it->id));
      if (!code) {
        store_.mark_requeued(it->id, "its process ended without an exit status");
        release_on_simulated(*it);
        it = active_.erase(it);
        continue;
      }
    }
    if (code) {
      settle(*it, *code);
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
  // Recovery queue first, then priority, then submit order.
  auto waiting = store_.list({JobState::kPending, JobState::kRequeued, JobState::kOutOfMemory});
  std::stable_sort(waiting.begin(), waiting.end(), [](const JobRecord& a, const JobRecord& b) {
    bool ra = a.state == JobState::kOutOfMemory, rb = b.state == JobState::kOutOfMemory;
    if (ra != rb) return ra;
    return a.spec.priority > b.spec.priority;
  });
  double now = unix_time_s();
  for (const auto& job : waiting) {
    if (!start(job) && options_.backfill.holds_back_later_jobs(now - job.submit_s)) break;
  }
  return store_.list({JobState::kPending, JobState::kRequeued, JobState::kOutOfMemory, JobState::kRunning}).size();
}

void Runner::run_until_done(const std::function<void()>& on_round) {
  while (step() > 0) {
    if (on_round) on_round();
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_interval_s));
  }
  if (on_round) on_round();
  mps_.clear();  // quits the MPS daemons this runner started
}

void Runner::stop_all(const std::string& reason) {
  for (auto& a : active_) {
    if (a.child) {
      a.child->terminate(5.0);
    } else {
      ::kill(-a.pgid, SIGTERM);
    }
    release_on_simulated(a);
    store_.mark_requeued(a.id, reason);
  }
  active_.clear();
  mps_.clear();
}

RunnerOptions runner_options_from_names(const std::string& policy, const std::string& mode,
                                        const std::string& recovery, double poll_interval_s,
                                        double reserve_after_s) {
  if (reserve_after_s < 0) throw InputError("--reserve-after", "", "expected seconds >= 0 (0: no reservation)");
  RunnerOptions options;
  options.backfill.reserve_after_s = reserve_after_s;
  options.policy = policy;
  options.mode = collocation_mode_from_string(mode);
  options.recovery.rule = recovery_rule_from_string(recovery);
  options.poll_interval_s = poll_interval_s;
  make_policy(options.policy);  // validates the name
  return options;
}

}  // namespace colo::sched
