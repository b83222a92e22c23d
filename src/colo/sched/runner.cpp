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
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"
#include "colo/core/table.h"
#include "colo/gpu/energy.h"
#include "colo/gpu/simulated_device.h"
#include "colo/core/stopwatch.h"
#include "colo/sched/mps_limit.h"
#include "colo/sched/oom.h"
#include "colo/sched/job_request.h"
#include "colo/sched/queue_order.h"

namespace colo::sched {
namespace {

// Readings of a job training alone that make its SM activity alone, at least.
constexpr int kAloneActivityReadings = 3;

std::optional<int> read_status(const std::string& path) {
  std::ifstream in(path);
  int code = 0;
  if (in >> code) return code;
  return std::nullopt;
}


}  // namespace

// The MPS control daemon's server, which NVML lists on every GPU it serves.
static bool is_mps_server(uint32_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  return std::getline(comm, name) && name.rfind("nvidia-cuda-mps", 0) == 0;
}

// The ledger's memory per GPU; without a GPU, one empty "no GPU" slot per
// job that may run at once.
static std::vector<int64_t> memory_totals(const std::vector<gpu::DevicePtr>& devices, int cpu_slots) {
  std::vector<int64_t> totals;
  for (const auto& d : devices) totals.push_back(d->info().mem_total_bytes);
  if (totals.empty()) totals.assign(static_cast<size_t>(std::max(cpu_slots, 1)), 0);
  return totals;
}

// The core's rules for these devices: one job a slot without a GPU; a job
// of unknown memory starts provisionally only where each process's memory
// shows (not on a simulated GPU).
static SchedulerOptions scheduler_options(const std::vector<gpu::DevicePtr>& devices, const RunnerOptions& options) {
  SchedulerOptions s;
  s.policy = options.policy;
  s.mode = devices.empty() ? CollocationMode::kExclusive : options.mode;
  s.thresholds = options.thresholds;
  s.recovery = options.recovery;
  s.backfill = options.backfill;
  s.predict_shares = options.predict_shares;
  s.provisional_memory =
      !devices.empty() && options.provisional_memory && gpu::as_simulated(devices.front()) == nullptr;
  return s;
}

Runner::Runner(JobStore& store, std::vector<gpu::DevicePtr> devices, RunnerOptions options)
    : store_(store), devices_(std::move(devices)), has_gpus_(!devices_.empty()), options_(std::move(options)),
      scheduler_(memory_totals(devices_, options_.cpu_slots), scheduler_options(devices_, options_)) {
  if (options_.cpu_slots < 1) {
    throw InputError("cpu_slots", "", "must be at least 1, not " + std::to_string(options_.cpu_slots));
  }
  // The scheduler's estimates run BLAS in other threads while this one forks jobs.
  keep_blas_on_calling_threads();
  if (!has_gpus_) {
    gpu::SimulatedGpuSpec cpu;
    cpu.name = "no GPU";
    for (int slot = 0; slot < options_.cpu_slots; ++slot) {
      devices_.push_back(std::make_shared<gpu::SimulatedDevice>(slot, cpu));
    }
    options_.mode = CollocationMode::kExclusive;  // one job a slot
  }
  if (options_.log_dir.empty()) options_.log_dir = store_.path() + ".logs";
  // Jobs run in their own directories: a relative --store must not move their status files.
  options_.log_dir = absolute_path(options_.log_dir);
  std::string error = make_directories(options_.log_dir);
  if (!error.empty()) throw InputError(options_.log_dir, "", "cannot create the job log directory: " + error);
  learn_shares();
  loaders_ = std::make_unique<LoaderProducers>(
      options_.colo_program.empty() ? colo_program_path() : options_.colo_program, options_.log_dir);
  if (options_.estimate_model) {
    estimates_ = std::make_unique<ModelEstimates>(store_, options_.estimate_model, options_.parallel_estimates,
                                                  options_.estimator_version);
  }
}

Runner::~Runner() = default;  // quits an MPS daemon it started, unless detach() left it to the jobs

std::string Runner::log_path(int64_t id) const { return options_.log_dir + "/job-" + std::to_string(id) + ".log"; }
std::string Runner::status_path(int64_t id) const {
  return options_.log_dir + "/job-" + std::to_string(id) + ".status";
}
std::string Runner::progress_path(int64_t id) const {
  return options_.log_dir + "/job-" + std::to_string(id) + ".progress";
}

void Runner::learn_shares() {
  for (const std::string& path : options_.learn_from) {
    if (!path_exists(path)) throw InputError(path, "", "--learn-from: no job store here");
    learn_from(JobStore(path).list());
  }
  learn_from(store_.list());
}

void Runner::learn_from(const std::vector<JobRecord>& jobs) {
  for (const auto& job : jobs) {  // by id: the latest measurement wins
    JobKeys keys = job_keys(job.spec);
    JobHistory& history = scheduler_.history();
    if (job.sm_share) history.learn_share(keys, *job.sm_share);
    if (job.state == JobState::kCompleted && job.peak_mem_bytes) history.learn_peak(keys, *job.peak_mem_bytes);
    if (job.alone_measured && job.alone_samples_per_s) history.learn_alone_rate(keys, *job.alone_samples_per_s);
  }
}

void Runner::observe_progress() {
  for (auto& job : active_) observe_progress(job);
}

void Runner::observe_progress(Active& job) {
  bool alone = std::none_of(active_.begin(), active_.end(), [&](const Active& other) {
    return other.id != job.id && other.pgid != 0 &&
           std::any_of(other.gpus.begin(), other.gpus.end(),
                       [&](int g) { return std::find(job.gpus.begin(), job.gpus.end(), g) != job.gpus.end(); });
  });
  if (auto reading = read_progress_file(progress_path(job.id))) {
    job.progress.observe(*reading, job.alone && alone);
    if (reading->samples > 0) job.training_seen = true;
  }
  job.alone = alone;
}

std::optional<double> Runner::normalized_throughput(int64_t id) const {
  for (const auto& a : active_) {
    if (a.id != id || a.pgid == 0) continue;
    auto recent = a.progress.recent_samples_per_s(options_.thresholds.throughput_window_s);
    auto alone = a.progress.alone_samples_per_s();
    if (!alone) alone = a.learned_alone;
    if (recent && alone && *alone > 0) return *recent / *alone;
    return std::nullopt;
  }
  return std::nullopt;
}

void Runner::record_throughput(Active& job) {
  observe_progress(job);  // its last report
  if (auto wait = job.progress.data_wait_pct()) store_.record_data_wait(job.id, *wait);
  auto overall = job.progress.samples_per_s();
  if (!overall) return;
  auto own_alone = job.progress.alone_samples_per_s();
  auto record = store_.get(job.id);
  if (!record) return;
  JobHistory& history = scheduler_.history();
  std::optional<double> alone = own_alone ? own_alone : history.alone_rate(job_keys(record->spec));
  store_.record_throughput(job.id, overall, alone, own_alone.has_value());
  if (own_alone) history.learn_alone_rate(job_keys(record->spec), *own_alone);
}

RequestFacts Runner::facts_of(const JobRecord& job) const {
  RequestFacts facts;
  facts.id = job.id;
  facts.mem_bytes = job.spec.mem_bytes;
  facts.sm_share = job.spec.sm_share.value_or(0);
  facts.gpus = job.spec.gpus;
  facts.keys = job_keys(job.spec);
  facts.oom_deaths = job.state == JobState::kOutOfMemory ? job.oom_deaths : 0;
  facts.peak_bytes = job.peak_mem_bytes.value_or(0);
  return facts;
}

JobRequest Runner::request_for(const JobRecord& job) const { return scheduler_.request_for(facts_of(job)); }

JobRequest Runner::adopted_request(const JobRecord& job) const {
  JobRequest request = request_for(job);
  if (job.sm_share) request.sm_share = *job.sm_share;
  return request;
}

void Runner::adopt(const JobRecord& job) {
  Active a;
  a.id = job.id;
  a.gpus = job.gpus.empty() ? std::vector<int>{std::max(job.gpu, 0)} : job.gpus;
  a.pgid = job.pid;
  ::kill(-a.pgid, SIGCONT);  // in case the scheduler before died while it was paused and its watchdog too
  a.request = adopted_request(job);
  a.learned_alone = scheduler_.history().alone_rate(job_keys(job.spec));
  account_on_simulated(a);
  scheduler_.adopt(a.request, job_keys(job.spec), a.gpus, clock_.elapsed_s(), shows_at_once(a));
  active_.push_back(std::move(a));
  spdlog::info("job {} adopted (process group {} still running)", job.id, job.pid);
}

void Runner::recover() {
  auto running = store_.list({JobState::kRunning});
  count_energy_while_down(running);
  for (const auto& job : running) {
    if (job.pid > 0 && process_alive(job.pid)) {
      adopt(job);
    } else if (auto code = read_status(status_path(job.id))) {
      Active a;
      a.id = job.id;
      a.gpus = job.gpus;
      settle(a, *code);
      // It ended while no scheduler watched it: when its status was written.
      if (auto ended = file_written_unix_s(status_path(job.id))) store_.correct_end_time(job.id, *ended);
    } else {
      store_.mark_requeued(job.id, "its process was lost while colo was down");
      spdlog::warn("job {} requeued: its process was lost", job.id);
    }
  }
}

void Runner::forget(const Active& job) {
  resume({job.id});
  loaders_->release(job.id);
  release_on_simulated(job);
  if (auto m = scheduler_.ended(job.id, clock_.elapsed_s())) record_share(*m);
}

void Runner::record_share(const MeasuredShare& m) {
  if (!store_.get(m.id)) return;
  if (m.seen) store_.record_sm_share(m.id, m.share);
  std::string how = m.alone ? "measured alone, its neighbours paused; beside them the GPU rose " + fixed(m.rise, 2) +
                                  (m.beside ? " and the rise rule read " + fixed(*m.beside, 2) : "")
                           : "its GPU's activity rose " + fixed(m.rise, 2);
  if (m.neighbour_slowdown) {
    how += ", its neighbours lost " + fixed(100 * *m.neighbour_slowdown, 0) + "% of their rate:";
    for (const auto& [id, loss] : m.neighbour_losses) how += " job " + std::to_string(id) + " " + fixed(100 * loss, 0) + "%";
    if (m.neighbour_demand) {
      how += "; their demand " + fixed(*m.neighbour_demand, 2) + (m.demand_from_speeds ? " from their speeds" : "");
    }
  }
  if (m.again) {
    spdlog::info("job {} not settled yet: {} ({})", m.id, m.unseen_because, how);
    return;
  }
  if (!m.seen) {
    spdlog::info("job {} settled unseen: {} ({}); it counts as {:.2f} here, and neither its record nor its "
                 "command's next job takes that as its share{}",
                 m.id, m.unseen_because, how, m.share, m.saturated ? "; its GPU takes no more jobs until one ends" : "");
    return;
  }
  spdlog::info("job {} settled{}: SM share {:.2f} ({}){}", m.id, m.once_training ? " again, now that it trains" : "",
               m.share, how,
               m.saturated ? "; its GPU's activity stopped growing, it takes no more jobs until one ends" : "");
}

void Runner::count_alone_activity(int gpu, double activity, double now) {
  const size_t jobs_here = scheduler_.ledger().jobs_on(gpu).size();
  for (auto& a : active_) {
    if (a.gpus.front() != gpu) continue;
    const double since = scheduler_.ledger().jobs().at(a.id).training_since_s;
    if (since < 0 || now - since < options_.thresholds.settle_warmup_s) continue;
    ++a.training_readings;
    if (jobs_here == 1) {
      a.alone_activity_sum += activity;
      ++a.alone_activity_readings;
    }
  }
}

void Runner::attribute_processes(int gpu, const std::vector<gpu::ProcessUsage>& processes,
                                 std::map<int64_t, int64_t>& used_by_job) {
  std::vector<bool> attributed(processes.size(), false);
  for (auto& a : active_) {
    if (std::find(a.gpus.begin(), a.gpus.end(), gpu) == a.gpus.end()) continue;
    int64_t used = 0;
    for (size_t k = 0; k < processes.size(); ++k) {
      if (!belongs_to_job(processes[k].pid, static_cast<uint32_t>(a.pgid))) continue;
      used += processes[k].used_mem_bytes;
      attributed[k] = true;
    }
    a.peak_bytes = std::max(a.peak_bytes, used);
    used_by_job[a.id] = std::max(used_by_job[a.id], used);
  }
  const std::vector<int> producers = loaders_->pids();
  for (size_t k = 0; k < processes.size(); ++k) {
    if (attributed[k] || is_mps_server(processes[k].pid)) continue;
    const uint32_t pid = processes[k].pid;
    if (std::any_of(producers.begin(), producers.end(),
                    [pid](int producer) { return belongs_to_job(pid, static_cast<uint32_t>(producer)); })) {
      continue;  // a shared-loader producer of its jobs: colo's own
    }
    unattributed_.push_back({gpu, pid, processes[k].used_mem_bytes});
  }
}

Observation Runner::observe(double now) {
  // Simulated GPUs follow the wall clock while real jobs run on them: those
  // made to (discover_devices's) by themselves, others advanced here.
  Observation seen;
  std::map<int64_t, int64_t> used_by_job;  // the most on one of its GPUs
  unattributed_.clear();
  double dt = last_observed_s_ < 0 ? 0 : now - last_observed_s_;
  last_observed_s_ = now;
  std::vector<GpuEnergyReading> readings;
  for (size_t g = 0; g < devices_.size(); ++g) {
    int index = static_cast<int>(g);
    gpu::SimulatedDevice* sim = gpu::as_simulated(devices_[g]);
    if (sim != nullptr && has_gpus_ && sim->clock() == gpu::SimulatedClock::kAdvanced) sim->advance(dt);
    gpu::DeviceSample sample;
    try {
      sample = devices_[g]->sample();
    } catch (const std::exception& e) {  // NVML stopped answering: schedule on the accounts alone
      spdlog::warn("GPU {}: no reading ({}); placing by the scheduler's accounts", g, e.what());
      continue;
    }
    auto previous = last_sample_.find(index);
    // The device's energy since the last round: the energy counter's
    // difference where the driver has one, else integrated power; split
    // among its jobs by SM share below.
    double energy = 0;
    if (previous != last_sample_.end()) {
      energy = gpu::energy_between({previous->second, sample}, previous->second.time_s, sample.time_s).energy_j;
    }
    last_sample_[index] = sample;
    if (!has_gpus_) continue;
    if (sample.energy_j) readings.push_back({index, devices_[g]->info().uuid, *sample.energy_j, unix_time_s()});
    std::optional<double> activity = sample.sm_active ? sample.sm_active : sample.gpu_util;
    seen.gpus.push_back(
        {index, activity, sim != nullptr ? std::optional<int64_t>() : std::optional<int64_t>(sample.mem_free_bytes)});
    std::vector<gpu::ProcessUsage> processes;
    try {
      if (sim == nullptr) processes = devices_[g]->processes();
    } catch (const std::exception& e) {
      spdlog::warn("GPU {}: no process list ({}); peaks not updated this round", g, e.what());
    }
    if (activity) count_alone_activity(index, *activity, now);
    // A simulated GPU reports what colo placed on it, not what a job used:
    // no peak is recorded, so history never learns an estimate back.
    if (sim == nullptr) attribute_processes(index, processes, used_by_job);
    split_energy(index, energy);
  }
  store_energy(readings);
  for (const auto& p : unattributed_) {
    if (!named_unattributed_.insert(p.pid).second) continue;
    spdlog::warn("GPU {}: process {} holds {} and belongs to no job colo runs here (another user's, or a job's "
                 "process that left its process group): its memory counts as taken, and no job is charged for it",
                 p.gpu, p.pid, bytes_human(double(p.used_mem_bytes)));
  }
  observe_progress();
  // A rate over the settle window: before a newcomer trains, and while it does.
  const double rate_window_s = std::max(options_.thresholds.settle_active_s, options_.thresholds.throughput_window_s);
  for (const auto& a : active_) {
    JobReading job{a.id, std::nullopt, a.training_seen, a.progress.recent_samples_per_s(rate_window_s), std::nullopt};
    if (const auto& last = a.progress.last()) job.work = WorkDone{static_cast<double>(last->samples), last->train_s};
    auto used = used_by_job.find(a.id);
    if (used != used_by_job.end()) job.used_bytes = used->second;
    seen.jobs.push_back(job);
  }
  return seen;
}

void Runner::report(const Measured& measured) {
  for (const auto& m : measured.shares) record_share(m);
  for (const auto& j : measured.judged) {
    ++judged_stats_.joins;
    if (j.closed) ++judged_stats_.closings;
    spdlog::info("job {} (SM share {:.2f}, known) joined its GPU past the SM ceiling: the GPU rose {:.2f} with it; {}",
                 j.id, j.share, j.rise,
                 j.closed ? "its activity stopped growing, it takes no more jobs until one ends"
                          : "it may take one more");
  }
  for (const auto& m : measured.peaks) {
    spdlog::info("job {}: memory measured at {} once it stopped growing; it reserves that plus 10% from now on", m.id,
                 bytes_human(double(m.peak_bytes)));
  }
  for (const auto& [gpu, why] : measured.closed) {
    spdlog::info("GPU {}: {}; it takes no further job until one leaves", gpu, why);
  }
}

void Runner::apply_estimates_of_running_jobs() {
  for (auto& a : active_) {
    if (!a.awaits_estimate || !estimates_) continue;
    ModelEstimates::Answer answer = estimates_->lookup(*a.awaits_estimate);
    if (answer.status == ModelEstimates::Status::kPending) continue;
    if (answer.status == ModelEstimates::Status::kKnown) {
      int64_t with_margin = answer.bytes + answer.bytes / 10;
      store_.set_memory_estimate(a.id, with_margin);
      if (auto request = scheduler_.estimate_arrived(a.id, with_margin)) a.request = *request;
      spdlog::info("job {} ({}) needs about {} ({}); it reserves that from now on", a.id, a.awaits_estimate->name,
                   bytes_human(double(with_margin)), answer.reason);
    } else {
      spdlog::warn("job {} ({}): memory need unknown ({}); its peak is measured instead", a.id,
                   a.awaits_estimate->name, answer.reason);
    }
    a.awaits_estimate.reset();
  }
}

std::string Runner::apply_model_estimate(JobRecord& job) {
  if (!estimates_ || job.spec.mem_bytes || estimate_key(job.spec).empty()) return "";
  ModelEstimates::Answer answer = estimates_->lookup(job.spec);
  if (answer.status == ModelEstimates::Status::kPending) return answer.reason;
  if (answer.status == ModelEstimates::Status::kKnown) {
    int64_t with_margin = answer.bytes + answer.bytes / 10;
    if (store_.set_memory_estimate(job.id, with_margin)) {
      spdlog::info("job {} ({}) needs about {} ({})", job.id, job.spec.name, bytes_human(double(with_margin)),
                   answer.reason);
    }
    job.spec.mem_bytes = with_margin;
  } else if (told_unknown_.insert(job.id).second) {
    spdlog::warn("job {} ({}): memory need unknown ({}); placed as a job of unknown memory", job.id, job.spec.name,
                 answer.reason);
  }
  return "";  // known, or never: placed as of unknown memory
}

void Runner::stop(int64_t id) {
  resume({id});  // a stopped process handles no SIGTERM
  for (auto& a : active_) {
    if (a.id != id || a.pgid == 0) continue;
    if (a.child) {
      a.child->terminate(5.0);
    } else {
      ::kill(-a.pgid, SIGKILL);
    }
    loaders_->release(a.id);
    release_on_simulated(a);
    a.pgid = 0;
  }
}

void Runner::release_loaders_of_jobs_gone(const std::vector<JobRecord>& waiting) {
  for (auto it = waiting_for_loader_.begin(); it != waiting_for_loader_.end();) {
    const int64_t id = *it;
    if (std::any_of(waiting.begin(), waiting.end(), [id](const JobRecord& job) { return job.id == id; })) {
      ++it;
      continue;
    }
    loaders_->release(id);
    it = waiting_for_loader_.erase(it);
  }
}

void Runner::settle(Active& job, int exit_code) {
  record_throughput(job);
  // Kept when it trained alone for at least half its training: a moment
  // alone at the end of a shared run says little.
  if (job.alone_activity_readings >= kAloneActivityReadings &&
      2 * job.alone_activity_readings >= job.training_readings) {
    store_.record_alone_sm_activity(job.id, job.alone_activity_sum / job.alone_activity_readings);
  }
  forget(job);
  std::string log = file_tail(log_path(job.id), 16384);
  ExitKind kind = classify_exit(exit_code, log);
  std::optional<int64_t> peak = job.peak_bytes > 0 ? std::optional<int64_t>(job.peak_bytes) : std::nullopt;
  if (kind == ExitKind::kSuccess) {
    store_.mark_finished(job.id, JobState::kCompleted, exit_code, "", peak, job.energy_j);
    auto record = store_.get(job.id);
    if (record && peak) scheduler_.history().learn_peak(job_keys(record->spec), *peak);
  } else if (kind == ExitKind::kFailure) {
    store_.mark_finished(job.id, JobState::kFailed, exit_code, "exit status " + std::to_string(exit_code), peak,
                         job.energy_j);
  } else {
    auto record = store_.get(job.id);
    int deaths = record ? record->oom_deaths + 1 : 1;
    std::string cause;
    auto sample = job.gpus.empty() ? last_sample_.end() : last_sample_.find(job.gpus.front());
    if (job.mem_limit && sample != last_sample_.end() && is_false_oom(*job.mem_limit, sample->second.mem_free_bytes)) {
      cause = " at its MPS limit of " + bytes_human(double(*job.mem_limit)) + " with " +
              bytes_human(double(sample->second.mem_free_bytes)) + " free on the GPU (a false OOM: its estimate was too small)";
      store_.count_false_oom(job.id);
    }
    if (state_after_oom_death(deaths, options_.recovery) == JobState::kFailed) {
      store_.mark_finished(job.id, JobState::kFailed, exit_code,
                           "GPU out of memory " + std::to_string(deaths) + " times" + cause + "; retry limit reached",
                           peak, job.energy_j, /*died_of_oom=*/true);
    } else {
      store_.mark_finished(job.id, JobState::kOutOfMemory, exit_code, "GPU out of memory" + cause + "; will retry",
                           peak, job.energy_j);
    }
    spdlog::warn("job {} died of GPU out-of-memory (death {})", job.id, deaths);
  }
}

size_t Runner::step() {
  report(scheduler_.observe(*this, clock_.elapsed_s()));
  // Jobs cancelled in the store (by `colo cancel`, from any process) stop here.
  for (const auto& job : store_.list({JobState::kCancelled})) {
    bool running = std::any_of(active_.begin(), active_.end(),
                               [&](const Active& a) { return a.id == job.id && a.pgid != 0; });
    if (!running) continue;
    if (auto m = scheduler_.stop(*this, job.id, clock_.elapsed_s())) record_share(*m);
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
        forget(*it);
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
  apply_estimates_of_running_jobs();
  auto waiting = store_.list({JobState::kPending, JobState::kRequeued, JobState::kOutOfMemory});
  release_loaders_of_jobs_gone(waiting);
  std::sort(waiting.begin(), waiting.end(), [](const JobRecord& a, const JobRecord& b) {
    return QueueKey{a.state == JobState::kOutOfMemory, a.spec.priority, a.submit_s, a.id} <
           QueueKey{b.state == JobState::kOutOfMemory, b.spec.priority, b.submit_s, b.id};
  });
  const double now = unix_time_s();
  std::map<int64_t, std::string> reasons;
  std::vector<WaitingJob> queue;
  round_jobs_.clear();
  for (auto& job : waiting) {
    // Submitted elsewhere (another host's colo submit): it would wait for ever.
    if (auto beyond = gpus_beyond_host(job.spec, has_gpus_ ? devices_.size() : 0)) {
      store_.fail_waiting(job.id, *beyond);
      spdlog::warn("job {} failed: {}", job.id, *beyond);
      continue;
    }
    if (hold_new_jobs_) {
      reasons[job.id] = "held: the scheduler is draining";
      continue;
    }
    WaitingJob w;
    w.estimate_pending = apply_model_estimate(job);
    w.facts = facts_of(job);
    w.rank = QueueKey{job.state == JobState::kOutOfMemory, job.spec.priority, job.submit_s, job.id};
    w.waited_s = now - job.submit_s;
    w.throughput_comparable = scheduler_.history().alone_rate(job_keys(job.spec)).has_value();
    round_jobs_[job.id] = RoundJob{&job, !w.estimate_pending.empty()};
    queue.push_back(std::move(w));
  }
  loaders_->begin_round();
  RoundOutcome outcome = scheduler_.round(queue, *this, clock_.elapsed_s());
  loaders_->end_round();
  for (auto& [id, why] : outcome.waiting) reasons[id] = std::move(why);
  if (outcome.reserved_for) {  // the jobs ranked after it were not tried
    bool after = false;
    for (const WaitingJob& w : queue) {
      if (after) reasons[w.facts.id] = "reserved for job " + std::to_string(*outcome.reserved_for);
      after = after || w.facts.id == *outcome.reserved_for;
    }
  }
  round_jobs_.clear();
  for (const auto& [id, reason] : reasons) {
    auto written = waiting_reason_.find(id);
    if (written != waiting_reason_.end() && written->second == reason) continue;
    store_.set_waiting_reason(id, reason);
    waiting_reason_[id] = reason;
  }
  for (auto it = waiting_reason_.begin(); it != waiting_reason_.end();) {
    it = reasons.count(it->first) ? std::next(it) : waiting_reason_.erase(it);
  }
  return store_.list({JobState::kPending, JobState::kRequeued, JobState::kOutOfMemory, JobState::kRunning}).size();
}

void Runner::run_until_done(const std::function<void()>& on_round) {
  while (step() > 0) {
    if (on_round) on_round();
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_interval_s));
  }
  if (on_round) on_round();
  mps_.reset();  // quits the MPS daemon this runner started
}

void Runner::stop_all(const std::string& reason) {
  paused_.clear();
  paused_since_.clear();
  paused_outside_.clear();
  for (auto& a : active_) {
    if (a.child) {
      a.child->terminate(5.0);
    } else {
      ::kill(-a.pgid, SIGTERM);
    }
    forget(a);
    store_.mark_requeued(a.id, reason);
  }
  active_.clear();
  for (int64_t id : waiting_for_loader_) loaders_->release(id);
  waiting_for_loader_.clear();
  mps_.reset();
}

void Runner::detach(const std::string& why) {
  // Reasons this runner wrote ("held: the scheduler is draining", "GPU 0:
  // memory ...") would outlive it and mislead.
  for (const auto& job : store_.list({JobState::kPending, JobState::kRequeued, JobState::kOutOfMemory})) {
    store_.set_waiting_reason(job.id, "queued: no scheduler is running (" + why + ")");
  }
  waiting_reason_.clear();
  paused_.clear();  // continued: the next scheduler adopts them running
  paused_since_.clear();
  paused_outside_.clear();
  for (const auto& a : active_) {
    release_on_simulated(a);
    scheduler_.ended(a.id, clock_.elapsed_s());
  }
  if (!active_.empty()) spdlog::info("{} running job(s) left running for the next scheduler to adopt", active_.size());
  // A producer only waiting jobs hold has no consumer to idle-exit after: stopped.
  for (int64_t id : waiting_for_loader_) loaders_->release(id);
  waiting_for_loader_.clear();
  loaders_->detach();
  active_.clear();
  if (mps_) mps_->leave_running();
  mps_.reset();
}

RunnerOptions runner_options_from_names(const std::string& policy, const std::string& mode,
                                        const std::string& recovery, double poll_interval_s,
                                        double reserve_after_s) {
  if (reserve_after_s < 0) throw InputError("--reserve-after", "", "expected seconds >= 0 (0: no reservation)");
  RunnerOptions options;
  options.backfill.reserve_after_s = reserve_after_s;
  if (!(poll_interval_s > 0)) throw InputError("--poll", "", "expected seconds > 0 between scheduling rounds");
  options.policy = policy;
  options.poll_interval_s = poll_interval_s;
  // Each name's own reader knows the names it takes; the user typed an option.
  auto named = [](const char* option, const auto& read) {
    try {
      read();
    } catch (const std::invalid_argument& e) {
      throw InputError(option, "", e.what());
    } catch (const std::out_of_range& e) {
      throw InputError(option, "", e.what());
    }
  };
  named("--mode", [&] { options.mode = collocation_mode_from_string(mode); });
  named("--recovery", [&] { options.recovery.rule = recovery_rule_from_string(recovery); });
  named("--policy", [&] { make_policy(options.policy); });
  // Shares measured alone: in one call on two H200s, 16 real jobs settled
  // 0.011 from their SM activity alone (median) against 0.151 by the rise
  // rule, at the same makespan (bench/results/sched/user_trace/probe_check).
  options.thresholds.probe_alone = true;
  // A known share counts once its job trains: with every share known, colo
  // simulate of the user trace's 24 jobs on one H200 took 1008.2 s with it
  // against 1142.8 s without (973.8 s when all settle, bench/results/sched/
  // user_trace/shares_once_training.json).
  options.thresholds.count_shares_once_training = true;
  return options;
}

}  // namespace colo::sched
