#include "colo/compare/levels.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "colo/compare/progress.h"
#include "colo/core/cpu_share.h"
#include "colo/core/files.h"
#include "colo/core/interrupt_cleanup.h"
#include "colo/core/paths.h"
#include "colo/core/progress_file.h"
#include "colo/core/start_together.h"
#include "colo/core/stopwatch.h"
#include "colo/gpu/mps.h"
#include "colo/gpu/nvml_device.h"
#include "colo/gpu/sampler.h"
#include "colo/sched/runner.h"
#include "colo/sched/admission.h"

namespace colo::compare {
namespace {

const std::map<ShareLevel, std::string>& level_names() {
  static const std::map<ShareLevel, std::string> names = {
      {ShareLevel::kSequential, "sequential"}, {ShareLevel::kTimeslice, "timeslice"},
      {ShareLevel::kMps, "mps"},               {ShareLevel::kSlots, "slots"},
      {ShareLevel::kScheduler, "scheduler"},   {ShareLevel::kFused, "fused"},
      {ShareLevel::kStreams, "streams"}};
  return names;
}

// How often a level's processes write their progress: often enough to time
// a run of a few seconds.
constexpr const char* kProgressInterval = "0.1";

// One process to start: argv run from `workdir` (through /bin/sh, so the
// command itself needs no cd), its output in `log`.
struct Launch {
  std::vector<std::string> argv;
  EnvironmentOverrides env;
  std::string log;
  std::string out_dir;  // what "{out}" became
  const WorkloadCommand* command = nullptr;
};

void make_output_dir(const std::string& dir) {
  std::string failure = make_directories(dir);
  if (!failure.empty()) throw std::runtime_error("cannot create " + dir + ": " + failure);
}

// The scheduler level's store and runner log directory, in its level directory.
std::string scheduler_store(const std::string& dir) { return dir + "/jobs.db"; }
std::string scheduler_log_dir(const std::string& dir) { return dir + "/logs"; }

// Removes the file `path` when it is there; throws std::runtime_error when
// it is there and cannot be removed.
void remove_earlier_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    throw std::runtime_error("cannot remove " + path + ", an earlier run's: " + std::strerror(errno));
  }
}

// A rerun into the same --out makes the level's logs and progress files its
// own: a process's log is appended to (ChildProcess), and an earlier run's
// progress file would be read as this run's. For the scheduler level the
// runner's job-* and loader-* files go, and with them its store: an earlier
// run's jobs would be listed beside this run's and, left unfinished (colo
// compare interrupted), run again without their .status files. What the
// processes wrote under their output directories stays.
void start_level_afresh(ShareLevel level, const std::vector<Launch>& launches, const std::string& dir) {
  for (const Launch& l : launches) {
    remove_earlier_file(l.log);
    remove_earlier_file(l.env.at(kProgressFileVariable));
  }
  if (level != ShareLevel::kScheduler) return;
  const std::string logs = scheduler_log_dir(dir);
  for (const std::string& name : list_directory(logs)) {
    if (name.rfind("job-", 0) == 0 || name.rfind("loader-", 0) == 0) remove_earlier_file(logs + "/" + name);
  }
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) remove_earlier_file(scheduler_store(dir) + suffix);
}

// Timeslice and MPS start every process at once to measure them training
// together; the one that finishes its start-up first would otherwise train
// alone, and at 8 Python processes most rounds had no time in which all
// trained (start_together.h). At most half the level's time limit is spent
// waiting; a process that never reports progress holds the others that long.
std::string start_together_group(const std::string& dir) { return dir + "/start-together"; }

void start_together(ShareLevel level, std::vector<Launch>& launches, const std::string& dir, double timeout_s) {
  const std::string group = start_together_group(dir);
  remove_tree(group);
  if ((level != ShareLevel::kTimeslice && level != ShareLevel::kMps) || launches.size() < 2) return;
  const double wait_s = timeout_s > 0 ? std::min(kStartTogetherDefaultTimeoutS, timeout_s / 2)
                                      : kStartTogetherDefaultTimeoutS;
  for (Launch& l : launches) {
    l.env[kStartTogetherVariable] = group;
    l.env[kStartTogetherCountVariable] = std::to_string(launches.size());
    l.env[kStartTogetherTimeoutVariable] = std::to_string(wait_s);
  }
}

// Seconds from the first process's joining its start-together group to the
// last one's: how long the first waited. nullopt with fewer than two.
std::optional<double> start_spread_s(const std::string& dir) {
  const std::string group = start_together_group(dir);
  std::vector<double> joined;
  for (const std::string& name : list_directory(group)) {
    if (auto at = file_written_unix_s(group + "/" + name)) joined.push_back(*at);
  }
  if (joined.size() < 2) return std::nullopt;
  auto [first, last] = std::minmax_element(joined.begin(), joined.end());
  return *last - *first;
}

std::vector<std::string> in_workdir(const std::vector<std::string>& argv, const std::string& workdir) {
  std::vector<std::string> wrapped = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", workdir};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

std::string budget_message(double timeout_s) {
  return "stopped at the level's time limit of " + std::to_string(static_cast<int>(timeout_s)) +
         " s (--level-timeout)";
}

std::vector<Launch> launches_for(const std::vector<const WorkloadCommand*>& commands, const std::string& dir) {
  std::vector<Launch> launches;
  for (const WorkloadCommand* c : commands) {
    Launch l;
    l.out_dir = dir + "/" + c->name;
    make_output_dir(l.out_dir);
    l.argv = in_workdir(with_output(*c, l.out_dir), c->workdir);
    l.env = c->env;
    l.log = dir + "/" + c->name + ".log";
    l.command = c;
    launches.push_back(std::move(l));
  }
  return launches;
}

// How a level's processes ended.
struct PoolEnd {
  std::string failure;         // the first failure, or the budget's end; "" when all exited 0
  bool past_budget = false;    // stopped at the level's time limit
  std::vector<bool> started;   // per launch
  // Per launch: still running when the budget stopped it, having started
  // only after another process of the level had ended (a queued successor,
  // in sequential and slots). Empty when not known.
  std::vector<bool> cut_successor;
};

// The process groups of a level's running processes, for an interrupt
// (Ctrl-C, SIGTERM) to stop: each runs in a group of its own, which the
// terminal's SIGINT never reaches, so left alone they would train on
// (holding the GPU) after colo compare has gone.
class RunningGroups {
 public:
  RunningGroups() : cleanup_(add_interrupt_cleanup([this] { stop_all(); })) {}
  ~RunningGroups() { remove_interrupt_cleanup(cleanup_); }
  RunningGroups(const RunningGroups&) = delete;
  RunningGroups& operator=(const RunningGroups&) = delete;

  void add(pid_t leader) {
    std::lock_guard<std::mutex> lock(mutex_);
    leaders_.insert(leader);
  }
  void remove(pid_t leader) {
    std::lock_guard<std::mutex> lock(mutex_);
    leaders_.erase(leader);
  }

 private:
  // SIGTERM to every group, SIGKILL after 3 s to those still alive.
  void stop_all() {
    std::set<pid_t> leaders;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      leaders = leaders_;
    }
    for (pid_t leader : leaders) ::kill(-leader, SIGTERM);
    Stopwatch clock;
    auto any_alive = [&leaders] {
      return std::any_of(leaders.begin(), leaders.end(), [](pid_t p) { return process_alive(p); });
    };
    while (any_alive() && clock.elapsed_s() < 3.0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (pid_t leader : leaders) {
      if (process_alive(leader)) ::kill(-leader, SIGKILL);
    }
  }

  std::mutex mutex_;
  std::set<pid_t> leaders_;
  int cleanup_;
};

// Runs `launches`, at most `concurrency` at a time, each with `extra_env`;
// stops everything past the timeout, or when colo is interrupted.
PoolEnd run_pool(std::vector<Launch>& launches, size_t concurrency, const EnvironmentOverrides& extra_env,
                 double timeout_s) {
  RunningGroups groups;
  PoolEnd end;
  end.started.assign(launches.size(), false);
  end.cut_successor.assign(launches.size(), false);
  std::vector<bool> successor(launches.size(), false);
  std::vector<std::unique_ptr<ChildProcess>> running(launches.size());
  size_t next = 0, done = 0, live = 0;
  std::string failure;
  Stopwatch clock;
  while (done < launches.size()) {
    while (failure.empty() && next < launches.size() && live < concurrency) {
      EnvironmentOverrides env = launches[next].env;
      env.insert(extra_env.begin(), extra_env.end());
      // end_with_parent: a `kill -9` of colo compare ends the process too.
      running[next] = std::make_unique<ChildProcess>(launches[next].argv, env, launches[next].log, true);
      groups.add(running[next]->pid());
      end.started[next] = true;
      successor[next] = done > 0;
      ++next;
      ++live;
    }
    for (size_t i = 0; i < running.size(); ++i) {
      if (!running[i]) continue;
      if (auto status = running[i]->poll()) {
        int code = exit_code_of(*status);
        if (code != 0 && failure.empty()) {
          failure = launches[i].command->name + " exited with " + std::to_string(code) + " (log: " +
                    launches[i].log + ")";
        }
        groups.remove(running[i]->pid());
        running[i].reset();
        ++done;
        --live;
      }
    }
    if (!failure.empty() && next < launches.size()) {  // nothing more starts after a failure
      done += launches.size() - next;
      next = launches.size();
    }
    if (clock.elapsed_s() > timeout_s) {
      for (size_t i = 0; i < running.size(); ++i) {
        if (!running[i]) continue;
        running[i]->terminate(2.0);
        end.cut_successor[i] = successor[i];
      }
      end.past_budget = true;
      end.failure = budget_message(timeout_s);
      return end;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  end.failure = failure;
  return end;
}

// A private, short MPS pipe directory: under /tmp, not $TMPDIR, since Unix
// socket paths are short.
std::string mps_pipe_directory() { return make_unique_directory("/tmp", "colo-compare-mps"); }

// The scheduler level; `watch` is made, once the jobs' progress files are
// known, to follow them.
PoolEnd run_scheduler(std::vector<Launch>& launches, const std::vector<gpu::DevicePtr>& devices,
                      const LevelOptions& options, const std::string& dir, std::unique_ptr<ProgressWatch>* watch) {
  PoolEnd end;
  sched::JobStore store(scheduler_store(dir));
  std::vector<sched::JobSpec> specs;
  for (const Launch& l : launches) {
    sched::JobSpec s;
    s.name = l.command->name;
    s.command = l.argv;
    s.env = std::map<std::string, std::string>(l.env.begin(), l.env.end());
    s.env.erase(kProgressFileVariable);  // the runner names each job's own
    s.mem_bytes = l.command->mem_bytes;
    specs.push_back(std::move(s));
  }
  sched::fill_memory_estimates(specs, &store);
  std::vector<int64_t> ids = store.submit(specs);
  sched::RunnerOptions runner_options = sched::runner_options_from_names("magm", "mps", "alone", 0.2);
  runner_options.log_dir = scheduler_log_dir(dir);
  std::string pipes = mps_pipe_directory();
  runner_options.mps_dir = pipes;
  runner_options.mps_control = options.mps_control;
  {
    sched::Runner runner(store, devices, runner_options);
    std::vector<std::string> progress_files;
    for (int64_t id : ids) progress_files.push_back(runner.progress_path(id));
    *watch = std::make_unique<ProgressWatch>(progress_files);
    Stopwatch clock;
    while (runner.step() > 0) {
      if (clock.elapsed_s() > options.timeout_s) {
        runner.stop_all("colo compare: past the level's time limit");
        end.past_budget = true;
        end.failure = budget_message(options.timeout_s);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  remove_tree(pipes);
  std::map<int64_t, sched::JobRecord> jobs;
  std::optional<double> first_completion;
  for (const sched::JobRecord& job : store.list()) {
    jobs[job.id] = job;
    if (job.state == sched::JobState::kCompleted && job.end_s) {
      first_completion = std::min(first_completion.value_or(*job.end_s), *job.end_s);
    }
  }
  for (int64_t id : ids) {
    const sched::JobRecord& job = jobs.at(id);
    end.started.push_back(job.start_s.has_value());
    end.cut_successor.push_back(end.past_budget && job.start_s && job.state != sched::JobState::kCompleted &&
                                first_completion && *job.start_s >= *first_completion);
    if (end.failure.empty() && job.state != sched::JobState::kCompleted) {
      end.failure = job.spec.name + " ended " + sched::to_string(job.state) + " (logs: " + runner_options.log_dir + ")";
    }
  }
  return end;
}

// The GPUs' readings over [t0, t1]: energy, mean SM activity, peak memory.
void measure(const gpu::Sampler& sampler, size_t devices, double t0, double t1, LevelRun* run) {
  double energy = 0, sm_sum = 0;
  int64_t sm_count = 0, peak = 0;
  bool have_energy = devices > 0;
  for (size_t d = 0; d < devices; ++d) {
    std::vector<gpu::DeviceSample> samples = sampler.samples(d);
    // The energy counter's last reading at or before t0 and first at or
    // after t1 (a reading may lack it when an NVML call fails under load).
    const gpu::DeviceSample* before = nullptr;
    const gpu::DeviceSample* after = nullptr;
    for (const gpu::DeviceSample& s : samples) {
      if (s.energy_j && (s.unix_s <= t0 || !before)) before = &s;
      if (s.energy_j && (!after || after->unix_s < t1)) after = &s;
      if (s.unix_s >= t0 && s.unix_s <= t1) {
        peak = std::max(peak, s.mem_used_bytes);
        std::optional<double> sm = s.sm_active ? s.sm_active : s.gpu_util;
        if (sm) {
          sm_sum += *sm;
          ++sm_count;
        }
      }
    }
    if (before && after && after->unix_s > before->unix_s) {
      energy += *after->energy_j - *before->energy_j;
    } else {
      have_energy = false;
    }
  }
  if (have_energy && energy > 0) run->energy_j = energy;
  if (sm_count > 0) run->mean_sm = sm_sum / static_cast<double>(sm_count);
  if (devices > 0) run->peak_mem_bytes = peak;
}

}  // namespace

std::vector<ShareLevel> all_share_levels() {
  std::vector<ShareLevel> levels;
  for (const auto& [level, name] : level_names()) levels.push_back(level);
  return levels;
}

std::string to_string(ShareLevel level) { return level_names().at(level); }

ShareLevel share_level_from_string(const std::string& name) {
  std::string known;
  for (const auto& [level, level_name] : level_names()) {
    if (level_name == name) return level;
    known += (known.empty() ? "" : ", ") + level_name;
  }
  throw std::invalid_argument("unknown level \"" + name + "\" (known: " + known + ")");
}

std::string level_unavailable(ShareLevel level, const CompareWorkload& workload, bool has_gpus,
                              const LevelOptions& options) {
  switch (level) {
    case ShareLevel::kMps:
      return has_gpus ? "" : "no GPU: MPS shares a GPU";
    case ShareLevel::kScheduler:
      return has_gpus ? "" : "no GPU: without one colo's scheduler runs jobs one at a time (= sequential)";
    case ShareLevel::kSlots:
      if (static_cast<size_t>(options.slots) >= workload.jobs.size()) {
        return std::to_string(options.slots) + " slots hold all " + std::to_string(workload.jobs.size()) +
               " jobs: the same as timeslice (--slots)";
      }
      return "";
    case ShareLevel::kFused:
      return workload.fused ? "" : workload.fused_missing;
    case ShareLevel::kStreams:
      return workload.streams ? "" : workload.streams_missing;
    default:
      return "";
  }
}

LevelRun run_share_level(ShareLevel level, const CompareWorkload& workload, const std::vector<gpu::DevicePtr>& devices,
                         const LevelOptions& options) {
  LevelRun run;
  run.level = level;
  const std::string dir = options.out_dir + "/" + to_string(level);
  make_output_dir(dir);
  std::vector<const WorkloadCommand*> commands;
  if (level == ShareLevel::kFused) {
    commands.push_back(&*workload.fused);
  } else if (level == ShareLevel::kStreams) {
    commands.push_back(&*workload.streams);
  } else {
    for (const WorkloadCommand& c : workload.jobs) commands.push_back(&c);
  }
  std::vector<Launch> launches = launches_for(commands, dir);
  const size_t concurrency = level == ShareLevel::kSequential ? 1
                             : level == ShareLevel::kSlots    ? static_cast<size_t>(options.slots)
                                                              : launches.size();
  std::vector<std::string> progress_files;
  for (Launch& l : launches) {
    progress_files.push_back(l.out_dir + ".progress");
    l.env[kProgressFileVariable] = progress_files.back();
    l.env[kProgressIntervalVariable] = kProgressInterval;
    // As torchrun does: N processes at once get a 1/N share of the cores
    // each. Left to their defaults, every process's OpenMP pool takes all
    // cores (16 LeNet processes under MPS on the H100: 525k samples/s,
    // against 838k with one thread each).
    share_cores(l.env, std::min(concurrency, launches.size()));
  }
  start_together(level, launches, dir, options.timeout_s);
  start_level_afresh(level, launches, dir);

  std::unique_ptr<gpu::Sampler> sampler;
  if (!devices.empty()) {
    run.timeline_csv = options.out_dir + "/timeline_" + to_string(level) + ".csv";
    sampler = std::make_unique<gpu::Sampler>(
        devices, gpu::SamplerOptions{options.sample_interval_s, 100000, run.timeline_csv});
    sampler->start();
  }
  std::unique_ptr<gpu::MpsDaemon> mps;
  EnvironmentOverrides extra;
  std::string mps_pipes;
  try {
    if (level == ShareLevel::kMps) {
      mps_pipes = mps_pipe_directory();
      gpu::MpsOptions mps_options;
      mps_options.control = options.mps_control;
      mps_options.pipe_dir = mps_pipes + "/pipe";
      mps_options.log_dir = mps_pipes + "/log";
      mps = std::make_unique<gpu::MpsDaemon>(mps_options);
      int share = std::max(1, 100 / static_cast<int>(launches.size()));
      extra = mps->client_environment(share, std::nullopt);
    }
    const double t0 = unix_time_s();
    std::unique_ptr<ProgressWatch> watch;
    if (level != ShareLevel::kScheduler) watch = std::make_unique<ProgressWatch>(progress_files);
    PoolEnd end = level == ShareLevel::kScheduler ? run_scheduler(launches, devices, options, dir, &watch)
                                                  : run_pool(launches, concurrency, extra, options.timeout_s);
    const double t1 = unix_time_s();
    run.wall_s = t1 - t0;
    run.start_spread_s = start_spread_s(dir);
    if (watch) watch->stop();
    std::vector<std::vector<TimedProgress>> progress;
    std::vector<size_t> progress_launch;  // which launch each entry of `progress` is
    for (size_t i = 0; watch && i < launches.size(); ++i) {
      if (!end.started[i]) continue;
      std::vector<TimedProgress> writes = watch->readings(i);
      // A successor the budget cut in its start-up or warm-up cannot be
      // timed, and need not be: the processes before it were.
      bool cut = i < end.cut_successor.size() && end.cut_successor[i];
      if (cut && !training_window({writes})) continue;
      progress.push_back(std::move(writes));
      progress_launch.push_back(i);
    }
    std::optional<TrainingWindow> window = training_window(progress);
    std::vector<std::vector<gpu::DeviceSample>> readings;
    if (sampler) {
      // NVML's energy counter is read at most once a second (nvml_device.h),
      // and the scheduler level's runner reads the same device objects: wait
      // for a reading past the last process's end, so the training window's
      // energy is interpolated, not missing.
      sampler->wait_for_energy_after(t1, 4 * gpu::NvmlDevice::kEnergyReadInterval_s + options.sample_interval_s);
      sampler->stop();
      measure(*sampler, devices.size(), t0, t1, &run);
      for (size_t d = 0; d < devices.size(); ++d) readings.push_back(sampler->samples(d));
    }
    if (window && window->seconds > 0) {
      run.train_s = window->seconds;
      run.train_samples_per_s = static_cast<double>(window->samples) / window->seconds;
      run.train_occupancy = window->occupancy;
      run.train_full_occupancy = window->full_occupancy;
      std::optional<double> joules = energy_within(readings, window->intervals);
      if (joules && *joules > 0) run.train_samples_per_j = static_cast<double>(window->samples) / *joules;
      run.union_s = window->union_seconds;
      run.union_energy_j = energy_within(readings, window->union_intervals);
      const size_t jobs = workload.jobs.size();
      run.job_span_samples.assign(jobs, 0.0);
      run.job_own_samples_per_s.assign(jobs, 0.0);
      for (size_t k = 0; k < progress.size(); ++k) {
        const double own = window->process_span_s[k] > 0
                               ? static_cast<double>(window->process_span_samples[k]) / window->process_span_s[k]
                               : 0.0;
        if (launches.size() == jobs) {  // a process per job
          run.job_span_samples[progress_launch[k]] = static_cast<double>(window->process_span_samples[k]);
          run.job_own_samples_per_s[progress_launch[k]] = own;
        } else {                        // one process trains every job
          for (size_t j = 0; j < jobs; ++j) {
            run.job_span_samples[j] += static_cast<double>(window->process_span_samples[k]) / static_cast<double>(jobs);
            run.job_own_samples_per_s[j] += own / static_cast<double>(jobs);
          }
        }
      }
    }
    run.stopped_at_budget = end.past_budget && window.has_value();
    if (run.stopped_at_budget) {
      for (const auto& writes : progress) run.samples += writes.back().samples;
    } else if (end.past_budget) {
      run.error = end.failure + "; its processes report no progress (" + std::string(kProgressFileVariable) +
                  "), so nothing is measured before they end: raise --level-timeout or trim with --steps";
    } else {
      run.error = end.failure;
    }
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  if (mps) mps->quit();
  if (!mps_pipes.empty()) remove_tree(mps_pipes);
  if (!run.error.empty()) return run;
  for (size_t i = 0; !run.stopped_at_budget && i < launches.size(); ++i) {
    std::optional<int64_t> samples = trained_samples(*launches[i].command, launches[i].out_dir);
    if (!samples) {
      run.error = launches[i].command->name + ": no trained samples found (declare `samples`, or check " +
                  launches[i].out_dir + ")";
      return run;
    }
    run.samples += *samples;
  }
  run.ok = true;
  run.wall_samples_per_s = run.wall_s > 0 ? static_cast<double>(run.samples) / run.wall_s : 0;
  if (run.energy_j) run.wall_samples_per_j = static_cast<double>(run.samples) / *run.energy_j;
  use_basis(run, run.train_samples_per_s ? ThroughputBasis::kTraining : ThroughputBasis::kWall);
  return run;
}

void use_basis(LevelRun& run, ThroughputBasis basis) {
  run.basis = basis;
  if (basis == ThroughputBasis::kTraining) {
    run.samples_per_s = run.train_samples_per_s.value_or(0);
    run.samples_per_j = run.train_samples_per_j;
  } else {
    run.samples_per_s = run.wall_samples_per_s;
    run.samples_per_j = run.wall_samples_per_j;
  }
}

std::string to_string(ThroughputBasis basis) {
  return basis == ThroughputBasis::kTraining ? "training" : "wall";
}

void normalise_against(LevelRun& run, const LevelRun& sequential) {
  const std::vector<double>& alone = sequential.job_own_samples_per_s;
  if (!run.ok || run.union_s <= 0 || alone.empty() || alone.size() != run.job_span_samples.size()) return;
  double alone_s = 0;  // seconds the samples would take, each job alone
  for (size_t j = 0; j < alone.size(); ++j) {
    if (alone[j] <= 0) return;
    alone_s += run.job_span_samples[j] / alone[j];
  }
  run.normalised_throughput = alone_s / run.union_s;
  if (run.union_energy_j && *run.union_energy_j > 0) run.alone_s_per_j = alone_s / *run.union_energy_j;
}

nlohmann::json to_json(const LevelRun& run) {
  nlohmann::json j = {{"level", to_string(run.level)}, {"ok", run.ok}, {"wall_s", run.wall_s},
                      {"samples", run.samples}, {"samples_per_s", run.samples_per_s},
                      {"basis", to_string(run.basis)}, {"wall_samples_per_s", run.wall_samples_per_s}};
  if (!run.ok) j["error"] = run.error;
  if (run.stopped_at_budget) j["stopped_at_budget"] = true;
  if (run.energy_j) j["energy_j"] = *run.energy_j;
  if (run.samples_per_j) j["samples_per_j"] = *run.samples_per_j;
  if (run.wall_samples_per_j) j["wall_samples_per_j"] = *run.wall_samples_per_j;
  if (run.train_s) j["train_s"] = *run.train_s;
  if (run.train_samples_per_s) j["train_samples_per_s"] = *run.train_samples_per_s;
  if (run.train_samples_per_j) j["train_samples_per_j"] = *run.train_samples_per_j;
  if (run.normalised_throughput) j["normalised_throughput"] = *run.normalised_throughput;
  if (run.alone_s_per_j) j["alone_s_per_j"] = *run.alone_s_per_j;
  if (run.train_s) {
    j["train_occupancy"] = run.train_occupancy;
    j["train_window"] = run.train_full_occupancy ? "full_occupancy" : "union";
  }
  if (run.start_spread_s) j["start_spread_s"] = *run.start_spread_s;
  if (run.mean_sm) j["mean_sm"] = *run.mean_sm;
  if (run.peak_mem_bytes) j["peak_mem_bytes"] = *run.peak_mem_bytes;
  if (!run.timeline_csv.empty()) j["timeline_csv"] = run.timeline_csv;
  return j;
}

}  // namespace colo::compare
