#include "colo/slurm/in_allocation.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"
#include "colo/core/table.h"
#include "colo/gpu/device.h"
#include "colo/sched/oom.h"
#include "colo/sched/recovery.h"
#include "colo/slurm/batch_script.h"
#include "colo/slurm/gres.h"
#include "colo/slurm/job_meter.h"
#include "colo/slurm/node_mps.h"
#include "colo/slurm/slurm_client.h"
#include "colo/slurm/state_dir.h"

namespace colo::slurm {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int signal) { g_stop_signal = signal; }

std::string env_or(const char* name, const std::string& fallback = "") {
  const char* value = std::getenv(name);
  return value ? std::string(value) : fallback;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The devices of the allocation: `visible` is CUDA_VISIBLE_DEVICES as Slurm
// set it, which discover_devices() keeps to (indices or UUIDs).
std::vector<gpu::DevicePtr> devices_of(const std::string& visible) {
  if (visible.empty()) return {};
  return gpu::discover_devices();
}

bool on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  std::stringstream dirs(env_or("PATH"));
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// The file this process's stdout goes to, when it is a regular file (Slurm's output file).
std::string stdout_file() {
  struct stat st {};
  if (::fstat(STDOUT_FILENO, &st) != 0 || !S_ISREG(st.st_mode)) return "";
  char target[4096];
  ssize_t n = ::readlink("/proc/self/fd/1", target, sizeof(target) - 1);
  if (n <= 0) return "";
  return std::string(target, static_cast<size_t>(n));
}

std::string comment_of(const AttemptRecord& r) {
  std::ostringstream c;
  c << "colo: attempt " << r.attempt << ", mem "
    << (r.mem_bytes ? bytes_human(static_cast<double>(*r.mem_bytes)) : std::string("whole GPU"));
  if (r.peak_bytes) c << ", peak " << bytes_human(static_cast<double>(*r.peak_bytes));
  if (r.energy_j) c << ", energy " << fixed(*r.energy_j, 0) << " J";
  if (r.state != "RUNNING") c << ", " << r.state;
  if (!r.retried_as.empty()) c << ", retried as " << r.retried_as;
  return c.str();
}

void publish(const StateDir& state, const AttemptRecord& record) {
  state.write_attempt(record);
  try {
    SlurmClient(10.0).set_comment(record.slurm_id, comment_of(record));
  } catch (const std::exception& e) {
    spdlog::warn("colo slurm: Comment of job {} not set ({})", record.slurm_id, e.what());
  }
}

// sbatch, tried again for up to a minute: a slurmctld that restarts refuses
// submissions ("Requested node configuration is not available") until the
// nodes have registered again, and nobody waits at this job's terminal.
std::string submit_patiently(const std::string& script, const std::vector<std::string>& sbatch,
                             const EnvironmentOverrides& env) {
  SlurmClient client;
  for (int attempt = 1;; ++attempt) {
    try {
      return client.submit(script, sbatch, env);
    } catch (const SlurmError& e) {
      if (attempt >= 30) throw;
      spdlog::warn("colo slurm: {} (trying again in 2 s)", e.what());
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
  }
}

// Submits the retry of an OOM death; returns its Slurm id (ID_TASK for an array task).
std::string submit_retry(const StateDir& state, const ExecOptions& options, const AllocationEnv& allocation,
                         std::optional<int64_t> mem) {
  SubmitOptions submit;
  submit.shard_bytes = options.shard_bytes;
  submit.shards_per_gpu = options.shards_per_gpu;
  GresRequest request = gres_request(options.gpus, mem, submit);
  std::vector<std::string> sbatch = {"--gres=" + request.gres};
  if (!allocation.array_task.empty()) sbatch.push_back("--array=" + allocation.array_task);
  std::string origin = allocation.retry_of.empty() ? allocation.job_id : allocation.retry_of;
  EnvironmentOverrides env = {{"COLO_SLURM_ATTEMPT", std::to_string(allocation.attempt + 1)},
                              {"COLO_SLURM_RETRY_OF", origin},
                              {"COLO_SLURM_MEM", mem ? std::to_string(*mem) : std::string("whole")}};
  std::string id = submit_patiently(state.script_path(options.name), sbatch, env);
  SubmittedJob job;
  job.slurm_id = id;
  job.name = options.name;
  job.gres = request.gres;
  job.mem_bytes = mem;
  job.attempt = allocation.attempt + 1;
  job.retry_of = origin;
  job.submit_unix = unix_now();
  if (!allocation.array_task.empty()) {
    int task = std::stoi(allocation.array_task);
    job.array = std::make_pair(task, task);
  }
  state.append_submitted(job);
  return allocation.array_task.empty() ? id : id + "_" + allocation.array_task;
}

}  // namespace

AllocationEnv allocation_from_environment() {
  AllocationEnv a;
  std::string job = env_or("SLURM_JOB_ID");
  if (job.empty()) throw InputError("colo slurm exec", "SLURM_JOB_ID", "to run inside a Slurm allocation (sbatch or srun)");
  a.array_task = env_or("SLURM_ARRAY_TASK_ID");
  a.job_id = a.array_task.empty() ? job : env_or("SLURM_ARRAY_JOB_ID", job) + "_" + a.array_task;
  a.node = env_or("SLURMD_NODENAME", env_or("HOSTNAME"));
  a.gpus = env_or("CUDA_VISIBLE_DEVICES");
  try {
    a.attempt = std::stoi(env_or("COLO_SLURM_ATTEMPT", "1"));
  } catch (const std::exception&) {
    throw InputError("COLO_SLURM_ATTEMPT", "", "an integer >= 1");
  }
  a.retry_of = env_or("COLO_SLURM_RETRY_OF");
  std::string mem = env_or("COLO_SLURM_MEM");
  if (mem == "whole") {
    a.mem_override = int64_t{0};
  } else if (!mem.empty()) {
    try {
      a.mem_override = std::stoll(mem);
    } catch (const std::exception&) {
      throw InputError("COLO_SLURM_MEM", "", "bytes or \"whole\"");
    }
  }
  return a;
}

std::optional<int64_t> retry_memory(const ExecOptions& options, int attempt, std::optional<int64_t> mem_bytes,
                                    std::optional<int64_t> peak_bytes) {
  sched::RecoveryOptions recovery;
  recovery.rule = sched::recovery_rule_from_string(options.recovery);
  if (recovery.rule == sched::RecoveryRule::kAlone || !mem_bytes) return std::nullopt;
  sched::JobRequest original;
  original.mem_bytes = mem_bytes;
  // It died at its pinned limit: it reached at least that, whatever the
  // sampled peak (which may miss the last allocation).
  int64_t observed = std::max(*mem_bytes, peak_bytes.value_or(0));
  int64_t need = sched::recovery_request(original, recovery, attempt, observed).mem_bytes.value_or(observed);
  if (options.shards_per_gpu > 0 && shards_for(need, options.shard_bytes) > options.shards_per_gpu) return std::nullopt;
  return need;
}

namespace {

// This attempt's record as it starts.
AttemptRecord starting_record(const ExecOptions& options, const AllocationEnv& allocation,
                              std::optional<int64_t> mem) {
  AttemptRecord record;
  record.slurm_id = allocation.job_id;
  record.name = options.name;
  record.attempt = allocation.attempt;
  record.retry_of = allocation.retry_of;
  record.command = options.command;
  record.workdir = current_directory();
  record.mem_bytes = mem;
  SubmitOptions sizes;  // no shards_per_gpu: what was asked for, never refused here
  sizes.shard_bytes = options.shard_bytes;
  record.gres = gres_request(options.gpus, mem, sizes).gres;
  record.node = allocation.node;
  record.gpus = allocation.gpus;
  record.start_unix = unix_now();
  return record;
}

// The client environment of the node's MPS daemon for this job's GPUs, with
// its memory limit; empty (and `mps` left null) where MPS is off, missing or
// fails to start, which the log says.
EnvironmentOverrides join_mps(const ExecOptions& options, const AllocationEnv& allocation, size_t gpu_count,
                              std::optional<int64_t> mem, std::unique_ptr<NodeMps>* mps) {
  if (gpu_count == 0) {
    spdlog::info("colo slurm: no GPU of this job is visible to NVML; running without MPS or measurements");
    return {};
  }
  if (!options.use_mps || !on_path(options.mps_control)) return {};
  std::string root = options.mps_root.empty() ? temp_directory() + "/colo-slurm-mps-" + std::to_string(::getuid())
                                              : options.mps_root;
  try {
    *mps = std::make_unique<NodeMps>(allocation.gpus, options.mps_control, root);
    return (*mps)->client_environment(mem, static_cast<int>(gpu_count));
  } catch (const std::exception& e) {
    mps->reset();
    spdlog::warn("colo slurm: running without MPS ({})", e.what());
    return {};
  }
}

struct JobEnd {
  int exit_code = 0;
  std::string output_tail;  // for telling an OOM death from other failures
};

// Runs the command until it ends, or until SIGTERM/SIGINT stops it, reading
// `meter` between polls. Its output goes to this process's stdout: straight
// when that is a file (Slurm's output file), else through `private_log`.
JobEnd run_measured(const ExecOptions& options, const EnvironmentOverrides& env, const std::string& private_log,
                    const std::vector<gpu::DevicePtr>& devices, AttemptRecord* record) {
  std::string output = stdout_file();
  std::string log = output.empty() ? private_log : "";
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGINT, on_stop_signal);
  ChildProcess child(options.command, env, log);
  JobMeter meter(devices, child.pid());
  std::optional<int> status;
  while (!(status = child.poll())) {
    if (g_stop_signal) {
      spdlog::warn("colo slurm: signal {}; stopping the job", static_cast<int>(g_stop_signal));
      child.terminate(10.0);
      status = child.wait();
      break;
    }
    meter.sample();
    std::this_thread::sleep_for(std::chrono::duration<double>(options.sample_interval_s));
  }
  JobEnd end{exit_code_of(*status), file_tail(output.empty() ? log : output, 64 * 1024)};
  if (!log.empty()) {
    std::string whole = read_file(log);
    std::fwrite(whole.data(), 1, whole.size(), stdout);
  }
  record->end_unix = unix_now();
  record->exit_code = end.exit_code;
  record->peak_bytes = meter.peak_bytes();
  record->energy_j = meter.energy_j();
  return end;
}

// Sets the record's state and reason from how the job ended, submitting the
// retry of an OOM death that has retries left.
void settle_attempt(const StateDir& state, const ExecOptions& options, const AllocationEnv& allocation,
                    std::optional<int64_t> mem, const JobEnd& end, AttemptRecord* record) {
  sched::ExitKind kind = sched::classify_exit(end.exit_code, end.output_tail);
  if (g_stop_signal) {
    record->state = "FAILED";
    record->reason = "stopped by signal " + std::to_string(static_cast<int>(g_stop_signal));
  } else if (kind == sched::ExitKind::kSuccess) {
    record->state = "COMPLETED";
  } else if (kind == sched::ExitKind::kOutOfMemory && allocation.attempt <= options.max_retries) {
    std::optional<int64_t> next = retry_memory(options, allocation.attempt, mem, record->peak_bytes);
    record->state = "OUT_OF_MEMORY";
    try {
      record->retried_as = submit_retry(state, options, allocation, next);
      record->reason = "GPU out of memory; retry " + std::to_string(allocation.attempt) + " of " +
                       std::to_string(options.max_retries) + " asks for " +
                       (next ? bytes_human(static_cast<double>(*next)) : std::string("a whole GPU"));
    } catch (const std::exception& e) {
      record->state = "FAILED";
      record->reason = std::string("GPU out of memory; its retry could not be submitted: ") + e.what();
    }
  } else if (kind == sched::ExitKind::kOutOfMemory) {
    record->state = "FAILED";
    record->reason = "GPU out of memory after " + std::to_string(options.max_retries) + " retries";
  } else {
    record->state = "FAILED";
    record->reason = "exit status " + std::to_string(end.exit_code);
  }
}

}  // namespace

int run_in_allocation(const ExecOptions& options, const AllocationEnv& allocation) {
  if (options.command.empty()) throw InputError("colo slurm exec", "", "a command after --");
  StateDir state(options.state_dir);
  std::optional<int64_t> mem = options.mem_bytes;
  if (allocation.mem_override) mem = *allocation.mem_override > 0 ? allocation.mem_override : std::nullopt;
  AttemptRecord record = starting_record(options, allocation, mem);
  std::vector<gpu::DevicePtr> devices = devices_of(allocation.gpus);
  std::unique_ptr<NodeMps> mps;  // left when this function returns: the last job quits the daemon
  EnvironmentOverrides env = join_mps(options, allocation, devices.size(), mem, &mps);
  record.mps = mps != nullptr;
  publish(state, record);

  JobEnd end = run_measured(options, env, state.path() + "/logs/" + allocation.job_id + ".exec.log", devices, &record);
  settle_attempt(state, options, allocation, mem, end, &record);
  spdlog::info("colo slurm: job {} {}{}{}", record.slurm_id, record.state, record.reason.empty() ? "" : ": ",
               record.reason);
  publish(state, record);
  return end.exit_code;
}

}  // namespace colo::slurm
