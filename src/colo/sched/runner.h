#pragma once
// Runs the jobs of a store on this machine's GPUs: places them with a
// policy, launches them, watches them, recovers OOM deaths.

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "colo/core/paused_groups.h"
#include "colo/core/stopwatch.h"
#include "colo/core/subprocess.h"
#include "colo/gpu/device.h"
#include "colo/gpu/mps.h"
#include "colo/sched/backfill.h"
#include "colo/sched/executor.h"
#include "colo/sched/job_progress.h"
#include "colo/sched/loader_producers.h"
#include "colo/sched/model_estimates.h"
#include "colo/sched/policy.h"
#include "colo/sched/recovery.h"
#include "colo/sched/scheduler.h"
#include "colo/sched/simulator.h"
#include "colo/sched/store.h"

namespace colo::sched {

struct RunnerOptions {
  std::string policy = "magm";
  CollocationMode mode = CollocationMode::kMps;
  Thresholds thresholds;
  RecoveryOptions recovery;
  BackfillRule backfill;
  // A job of a new command takes the SM share measured for the same model
  // (workload_key) instead of settling; false: only the same command's.
  bool predict_shares = true;
  double poll_interval_s = 0.5;
  std::string log_dir;            // per-job logs and exit-status files
  std::string colo_program;       // runs jobs' shared-loader producers ("" = the colo beside this program)
  std::string mps_dir;            // private MPS pipe/log dirs (mode mps)
  std::string mps_control = "nvidia-cuda-mps-control";
  // mode mps: each job may pin at most its estimate plus the margin
  // (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT; see mps_limit.h).
  bool mps_memory_limits = true;
  // On a host without a GPU: how many jobs run at once, each in a slot of
  // its own (no GPU memory or SM share accounted), so that jobs reading one
  // shared loader can share its decoding there too.
  int cpu_slots = 1;
  // Estimates a waiting job's [job.model] table when it states no `mem`
  // (model_estimates.h); empty: such jobs are placed as of unknown memory.
  EstimateModel estimate_model;
  std::string estimator_version;  // what made estimate_model's answers (ModelEstimates)
  int parallel_estimates = 4;  // at most this many at once
  // A job of unknown memory may share a GPU with a provisional reservation
  // (JobRequest::provisional); false: it only starts on an empty GPU.
  bool provisional_memory = true;
  // Other job stores whose measurements (SM shares, peaks, rates alone) it
  // learns before its own store's, which win where both know a job: what
  // earlier runs in those stores measured need not be measured again.
  // Each must exist (InputError otherwise).
  std::vector<std::string> learn_from;
};

// Options from the names a user gives (policy, collocation mode, recovery
// rule), the polling interval and the backfill reservation (seconds, 0 for
// none); throws InputError for an unknown name or a negative time before
// anything runs.
RunnerOptions runner_options_from_names(const std::string& policy, const std::string& mode,
                                        const std::string& recovery, double poll_interval_s,
                                        double reserve_after_s = 0);

// One scheduler over one store and the devices it was given: the executor
// of real processes (executor.h) under the scheduler core (scheduler.h),
// which the simulator drives too, so both decide by the same rules. A job that declares
// no SM share settles before its GPU takes another, and its measured share
// is kept in the store for later jobs of the same command; so is the peak
// memory of a completed job, the estimate of a later one that has none. A job of
// `gpus = N` is gang-placed on N GPUs (CUDA_VISIBLE_DEVICES lists them; one
// MPS daemon serves all GPUs). A waiting job's reason is in the store. Jobs run as
// `/bin/sh` wrappers in their own process groups, with stdout and stderr in
// `<log_dir>/job-<id>.log` and their exit status written to
// `<log_dir>/job-<id>.status`, so a restarted runner can still learn how a
// job it did not start ended. A job that reports its training throughput to
// $COLO_PROGRESS_FILE (`<log_dir>/job-<id>.progress`; colo train does) gets
// its samples/s, alone and overall, and its slowdown in the store; its alone
// figure comes from an earlier job of the same command or model when it
// never ran alone. A job that names its model ([job.model]) but no `mem`
// waits for its estimate, which runs in the background (model_estimates.h),
// unless a GPU is empty: then it starts as one of unknown memory. A job of
// unknown memory reserves what is free on its GPU, less the margin (its MPS
// pinned-memory limit too), until its peak is measured; then it reserves
// that peak plus 10%, and later jobs of its command are given it. Not thread-safe.
class Runner : private Executor {
 public:
  // With no devices, jobs run without a GPU, options.cpu_slots at a time.
  // Throws InputError when the log directory cannot be created or
  // cpu_slots is below 1.
  Runner(JobStore& store, std::vector<gpu::DevicePtr> devices, RunnerOptions options);
  ~Runner();

  // After a restart: jobs the store says are RUNNING are adopted when their
  // process group still lives, else settled from their status file, else
  // REQUEUED. What each GPU's energy counter counted since the last reading
  // in the store (JobStore::add_energy) goes to the jobs that ran on it
  // meanwhile, as energy_while_down_j (energy_while_down.h); a job whose
  // process was lost gets none, nor does any job where the counter cannot
  // be read or went back (another GPU, a driver reload). Call once before step().
  void recover();

  // One round: settle finished jobs (OOM deaths to the recovery queue, or
  // FAILED past the retry limit), then place and start waiting jobs. Each
  // round that has jobs running writes their energy so far to the store,
  // with the GPUs' counter readings it was counted up to, so a crash loses none.
  // Returns how many jobs are not yet in a final state.
  size_t step();

  // Steps until every job is final; `on_round` (if set) is called after each.
  void run_until_done(const std::function<void()>& on_round = {});

  // Stops every job this runner watches (SIGTERM, then SIGKILL) and requeues them.
  void stop_all(const std::string& reason);
  // The file job `id` reports its progress to ($COLO_PROGRESS_FILE).
  std::string progress_path(int64_t id) const;

  // Stops watching without stopping anything: running jobs keep running,
  // stay RUNNING in the store, and the next runner on the store adopts them
  // (recover()); the MPS daemon and their shared-loader producers are left
  // running for them (a producer only jobs still waiting hold is stopped).
  // For a graceful stop of colod (an upgrade, a service restart). Waiting
  // jobs' reasons then say no scheduler runs, and `why` ("colod drained").
  void detach(const std::string& why = "the scheduler stopped");

  // While held, step() settles jobs but starts none (colod --drain).
  void hold_new_jobs(bool hold) { hold_new_jobs_ = hold; }
  // Jobs this runner watches now.
  size_t running() const { return active_.size(); }
  // What it has learned of jobs alike (SM shares, peaks, rates alone): from
  // options.learn_from's stores, its own store, and the jobs it ran since.
  const JobHistory& history() const { return scheduler_.history(); }

  // A process on one of this runner's GPUs that no job it runs accounts for.
  struct UnattributedProcess {
    int gpu = 0;
    uint32_t pid = 0;
    int64_t used_mem_bytes = 0;
  };
  // As of the last round: processes holding memory on this runner's real
  // GPUs that belong to none of its jobs (by process group or descent):
  // another user's, or a job's process that left its group and its parent
  // chain. Their memory counts as taken, as the device's free memory shows
  // it, but no job is charged for it; each is named once in the log. The
  // MPS server and the jobs' shared-loader producers are not listed.
  const std::vector<UnattributedProcess>& unattributed_processes() const { return unattributed_; }

  // The latest reading of each device (by position), taken at the start of
  // the last step(). Simulated GPUs carry the memory estimate and SM share
  // of the jobs running on them, on the wall clock.
  const std::map<int, gpu::DeviceSample>& last_samples() const { return last_sample_; }

  // What measuring shares alone cost so far: jobs paused (each pause of
  // each job once) and the seconds they stayed paused, added up.
  struct PauseStats {
    int pauses = 0;
    double paused_job_s = 0;
  };
  const PauseStats& pause_stats() const { return pause_stats_; }
  // Jobs of known share that joined a GPU past the SM ceiling and were
  // judged by their rise (gpu_ledger.h), and how many of them closed it.
  struct JudgedStats {
    int joins = 0;
    int closings = 0;
  };
  const JudgedStats& judged_stats() const { return judged_stats_; }

 private:
  struct Active {
    int64_t id = 0;
    std::vector<int> gpus;
    int pgid = 0;
    std::unique_ptr<ChildProcess> child;  // null for an adopted job
    JobRequest request;
    int64_t peak_bytes = 0;
    double energy_j = 0;                 // not yet written to the store
    std::optional<int64_t> mem_limit;    // its MPS pinned-memory limit, if any
    JobProgress progress;                // from its $COLO_PROGRESS_FILE
    bool alone = false;                  // had its GPUs to itself at the last reading
    std::optional<double> learned_alone; // samples/s alone of an earlier job of its command or model
    bool training_seen = false;          // it has reported training progress
    std::optional<JobSpec> awaits_estimate;  // started before its model's estimate came
    double alone_activity_sum = 0;       // its GPU's SM activity at rounds it trained there alone
    int alone_activity_readings = 0;
    int training_readings = 0;           // rounds it trained, past its warm-up
  };

  void settle(Active& job, int exit_code);
  // Drops a job from the accounts; a share measured as it leaves is kept.
  void forget(const Active& job);
  // Keeps a measured share in the store, and says so.
  void record_share(const MeasuredShare& m);
  // Stores and logs what the scheduler measured in its last observe().
  void report(const Measured& measured);
  // Executor: starts a job the scheduler placed (its JobRecord is this
  // round's, round_jobs_), when its shared loader, if it names one, has
  // filled its ring (LoaderProducers::ready); else says why it waits.
  Launch launch(int64_t id, const std::vector<int>& gpus, const JobRequest& request) override;
  // Executor: stops a running job (SIGTERM, then SIGKILL) and lets go of its loader.
  void stop(int64_t id) override;
  // Executor: stops the jobs' process groups (SIGSTOP) while a job beside
  // them is measured alone; a watchdog continues them should colo die or
  // stall meanwhile (PausedGroups). A job that cannot be paused is named in
  // the log and runs on: that share is then measured with it running.
  void pause(const std::vector<int64_t>& ids) override;
  // A paused job's activity on a simulated GPU drops to 0 until resumed.
  void show_paused_on_simulated(int64_t id, bool paused);
  // What a job keeps a simulated GPU busy with: its share, else 0.5.
  static double simulated_share(const Active& job);
  // Executor: continues paused jobs (SIGCONT).
  void resume(const std::vector<int64_t>& ids) override;
  // Executor: samples the devices (energy split among their jobs, written
  // to the store), reads each job's memory and its progress file.
  Observation observe(double now_s) override;
  // Counts GPU `gpu`'s `activity` for the jobs training on it past their
  // warm-up, and as activity alone for a job that is there alone.
  void count_alone_activity(int gpu, double activity, double now_s);
  // Gives each job on `gpu` the memory of its processes (by process group
  // or descent; its peak, and the most on one GPU in `used_by_job`), and
  // lists processes of no job in unattributed_.
  void attribute_processes(int gpu, const std::vector<gpu::ProcessUsage>& processes,
                           std::map<int64_t, int64_t>& used_by_job);
  // Splits `energy_j`, what GPU `gpu` used since the last round, among its
  // jobs by their energy shares.
  void split_energy(int gpu, double energy_j);
  std::optional<double> normalized_throughput(int64_t id) const override;
  // Fills in a waiting job's memory from its model's estimate when that is
  // known; returns why it still waits for it ("" when it does not).
  std::string apply_model_estimate(JobRecord& job);
  // Running jobs that started before their model's estimate came: each that
  // has it now reserves it (unless its peak was measured first).
  void apply_estimates_of_running_jobs();
  // Lets go of the producers of jobs that waited for them and are no longer
  // waiting (cancelled, or failed, meanwhile): `waiting` is every job still waiting.
  void release_loaders_of_jobs_gone(const std::vector<JobRecord>& waiting);
  // What the scheduler knows of a job in the store.
  RequestFacts facts_of(const JobRecord& job) const;
  JobRequest request_for(const JobRecord& job) const;
  // What a job adopted after a restart asks: its request, with the SM share measured for it.
  JobRequest adopted_request(const JobRecord& job) const;
  void adopt(const JobRecord& job);
  // Counts the energy used while no scheduler watched to the `running`
  // jobs (recover()); this runner's own count starts from these readings.
  void count_energy_while_down(const std::vector<JobRecord>& running);
  // Writes the running jobs' energy and the GPUs' counter readings `readings`.
  void store_energy(const std::vector<GpuEnergyReading>& readings);
  // What the stores of options_.learn_from, then its own store, measured
  // (history); a learn_from store that does not exist is an InputError.
  void learn_shares();
  void learn_from(const std::vector<JobRecord>& jobs);
  // Reads every running job's progress file (job_progress.h).
  void observe_progress();
  void observe_progress(Active& job);
  // Stores a finished job's throughput, alone and overall, and learns its own alone figure.
  void record_throughput(Active& job);
  // A simulated GPU accounts the jobs placed on it (their estimate and SM
  // share); both are no-ops on a real GPU.
  void account_on_simulated(const Active& job);
  void release_on_simulated(const Active& job);
  // The memory a job shows the moment it starts: 1 byte on a simulated GPU
  // (which shows no process's memory), so that it counts as active at once.
  int64_t shows_at_once(const Active& job) const;
  // The one MPS daemon over all of this runner's GPUs, started on first use.
  gpu::MpsDaemon* mps();
  // The environment a shared-loader producer starts with (see runner.cpp).
  EnvironmentOverrides producer_environment();
  std::string log_path(int64_t id) const;
  std::string status_path(int64_t id) const;

  JobStore& store_;
  std::vector<gpu::DevicePtr> devices_;
  bool has_gpus_;
  RunnerOptions options_;
  Scheduler scheduler_;
  std::vector<Active> active_;
  std::unique_ptr<gpu::MpsDaemon> mps_;
  std::unique_ptr<LoaderProducers> loaders_;  // jobs' shared-loader producers
  std::unique_ptr<ModelEstimates> estimates_;  // null without options_.estimate_model
  std::set<int64_t> told_unknown_;             // jobs whose unknown estimate was logged
  std::set<int64_t> waiting_for_loader_;      // jobs that hold a producer they wait for
  std::map<int, gpu::DeviceSample> last_sample_;
  std::vector<UnattributedProcess> unattributed_;  // as of the last round
  std::set<uint32_t> named_unattributed_;          // pids already named in the log
  // This round's waiting jobs by id, for launch(); and whether each waits
  // for its model's estimate.
  struct RoundJob {
    const JobRecord* record = nullptr;
    bool estimate_pending = false;
  };
  std::map<int64_t, RoundJob> round_jobs_;
  std::map<int64_t, std::string> waiting_reason_;  // as last written to the store
  bool hold_new_jobs_ = false;
  // Paused jobs by id; a pause of several jobs is shared by them, and the
  // last one resumed dismisses its watchdog. Last: destroyed first, so no
  // job outlives this runner stopped.
  std::map<int64_t, std::shared_ptr<PausedGroups>> paused_;
  std::map<int64_t, double> paused_since_;  // clock_ when each paused job was paused
  std::map<int64_t, std::vector<pid_t>> paused_outside_;  // each paused job's processes outside its group
  PauseStats pause_stats_;
  JudgedStats judged_stats_;
  Stopwatch clock_;
  double last_observed_s_ = -1;  // clock_ at the last observe_devices()
};

}  // namespace colo::sched
