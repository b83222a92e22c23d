#pragma once
// The job store: every job and every state change, in SQLite (WAL mode).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "colo/sched/job.h"
#include "colo/sched/job_spec.h"
#include "colo/sched/model_estimate.h"

struct sqlite3;

namespace colo::sched {

// A job as the store holds it.
struct JobRecord {
  int64_t id = 0;
  JobSpec spec;
  JobState state = JobState::kPending;
  double submit_s = 0;           // unix time
  std::optional<double> start_s;
  std::optional<double> end_s;
  int gpu = -1;                  // first GPU of the running (or last) attempt
  std::vector<int> gpus;         // all of its GPUs (a multi-GPU job has several)
  int pid = 0;                   // process group of the running attempt
  std::optional<int> exit_code;
  std::string reason;
  int attempts = 0;
  int oom_deaths = 0;
  std::optional<int64_t> peak_mem_bytes;
  double energy_j = 0;             // over all its runs, counted while they ran
  // Of energy_j, what its GPUs used while no scheduler watched, split among
  // the jobs on them by estimate (energy_while_down.h).
  double energy_while_down_j = 0;
  std::string log_path;
  std::optional<double> sm_share;  // SM share measured when it settled (gpu_ledger.h)
  int false_ooms = 0;              // OOM deaths at its MPS limit with room left on the GPU
  // Training throughput it reported through $COLO_PROGRESS_FILE (job_progress.h).
  std::optional<double> samples_per_s;
  std::optional<double> alone_samples_per_s;  // with its GPUs to itself: its own or learned
  bool alone_measured = false;                // alone_samples_per_s is its own measurement
  std::optional<double> data_wait_pct;        // percent of its training time spent waiting for data
  std::optional<double> alone_sm_activity;    // its GPU's mean SM activity while it trained alone there
  // Throughput alone over throughput overall; nullopt without both.
  std::optional<double> slowdown() const;
};

// One attempt of a job, from its start to its end, and the state it ended
// in: RUNNING (end_s nullopt) while it runs; REQUEUED when its process was
// lost; else the state mark_finished or cancel gave the job.
struct JobRun {
  double start_s = 0;  // unix time
  std::optional<double> end_s;
  JobState state = JobState::kRunning;
};

// A GPU's total-energy counter (gpu::DeviceSample::energy_j) as the
// runner read it when it last wrote its jobs' energy to the store: what
// the GPU used after `unix_s` is counted to no job yet.
struct GpuEnergyReading {
  int gpu = 0;            // the runner's GPU index
  std::string uuid;       // to tell a different GPU at that index
  double counter_j = 0;
  double unix_s = 0;
};

// A record as JSON (`colo show`, colod's API): the spec, state, times,
// placement, attempts, exit code, peak memory, energy, log.
nlohmann::json to_json(const JobRecord& record);

// colo's state directory: $XDG_STATE_HOME/colo, else ~/.local/state/colo.
std::string state_directory();

// The path used when none is given: state_directory()/jobs.db.
std::string default_store_path();

// An open store. Each method is one transaction, so a crash (kill -9) at any
// moment leaves every job in exactly one state. Several processes may open
// the same file (SQLite locking, 10 s busy timeout). Methods throw
// std::runtime_error on a database error; the constructor throws InputError
// when the file cannot be opened or is not a colo store.
class JobStore {
 public:
  explicit JobStore(const std::string& path);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // Adds the jobs (arrays expanded) as PENDING, all or none; returns their ids.
  // With a `source` (a job file's path and content, as colo run names it),
  // the store remembers which ids came from it, in the same transaction.
  std::vector<int64_t> submit(const std::vector<JobSpec>& specs, const std::string& source = "");
  // The ids submitted from `source` before, by id; empty when none were.
  std::vector<int64_t> submitted_from(const std::string& source) const;

  std::optional<JobRecord> get(int64_t id) const;
  // All jobs, or those in `states`, by id.
  std::vector<JobRecord> list(const std::vector<JobState>& states = {}) const;

  // PENDING/REQUEUED/OUT_OF_MEMORY -> RUNNING on `gpus`; clears the
  // waiting reason and begins a run (runs()). False if the job was no
  // longer waiting (cancelled meanwhile): it must not be started.
  bool mark_running(int64_t id, const std::vector<int>& gpus, int pid, const std::string& log_path);
  // Why a waiting job waits ("GPU 0: memory: ..."); no effect on others.
  void set_waiting_reason(int64_t id, const std::string& reason);
  // The SM share measured for a job, kept for later jobs of the same command.
  void record_sm_share(int64_t id, double share);
  // The training throughput a job reported, overall and alone (see JobRecord).
  void record_throughput(int64_t id, std::optional<double> samples_per_s, std::optional<double> alone_samples_per_s,
                         bool alone_measured);
  // The percent of its training time a job waited for data (JobProgress::data_wait_pct).
  void record_data_wait(int64_t id, double percent);
  // Its GPU's mean SM activity while the job trained there alone: what it
  // uses alone, beside the share it settled at.
  void record_alone_sm_activity(int64_t id, double activity);
  // One more false OOM (mps_limit.h, is_false_oom) for a job.
  void count_false_oom(int64_t id);
  // RUNNING -> COMPLETED | FAILED | OUT_OF_MEMORY | CANCELLED. An
  // OUT_OF_MEMORY death, or a FAILED one with `died_of_oom` (its last,
  // past the retry limit), counts one more in oom_deaths.
  void mark_finished(int64_t id, JobState state, std::optional<int> exit_code, const std::string& reason,
                     std::optional<int64_t> peak_mem_bytes, double energy_j, bool died_of_oom = false);
  // Adds `energy_j` to each job's energy (energy_while_down_j too when
  // `while_down`) and keeps `readings` in place of earlier ones of the same
  // GPUs, in one transaction: after a crash, the readings say up to when
  // the stored energy counts.
  void add_energy(const std::map<int64_t, double>& energy_j, const std::vector<GpuEnergyReading>& readings,
                  bool while_down = false);
  // The last reading kept of each GPU, by GPU index.
  std::vector<GpuEnergyReading> gpu_energy_readings() const;
  // PENDING | REQUEUED | OUT_OF_MEMORY -> FAILED with `reason`: a waiting
  // job that can never start here. No effect on a job in another state.
  void fail_waiting(int64_t id, const std::string& reason);
  // A finished job ended at `end_s` (seconds since the epoch), earlier than
  // when it was marked finished: one that ended while no scheduler watched
  // it. No effect on a job not final, or for a later time.
  void correct_end_time(int64_t id, double end_s);
  // RUNNING -> REQUEUED (its process was lost).
  void mark_requeued(int64_t id, const std::string& reason);
  // Any non-final state -> CANCELLED (a runner watching the job stops it);
  // returns the previous state, nullopt for an unknown id.
  std::optional<JobState> cancel(int64_t id);
  // Every run of job `id` in the order they began; empty for a job that
  // never started or ran only before stores kept runs. A run ends, in the
  // same transaction, when its job leaves RUNNING.
  std::vector<JobRun> runs(int64_t id) const;

  // The estimate made before for the [job.model] table of content `key`
  // (model_estimates.h), known or not; nullopt when none was made.
  std::optional<ModelEstimate> model_estimate(const std::string& key) const;
  // Keeps the estimate of table `key`, made in `seconds`, replacing any before.
  void record_model_estimate(const std::string& key, const ModelEstimate& estimate, double seconds);
  // A waiting or running job that states no memory gets `mem_bytes` as its
  // estimate; false (and no change) for a finished job or one that states one.
  bool set_memory_estimate(int64_t id, int64_t mem_bytes);

  const std::string& path() const { return path_; }

 private:
  // Runs `sql`; while another process holds the file, tries again for up
  // to `retry_locked_s` (for statements SQLite answers "locked" at once,
  // without its busy handler). Throws std::runtime_error otherwise.
  void exec(const std::string& sql, double retry_locked_s = 0) const;
  // exec, retried for up to 10 s while another process holds the file.
  void exec_when_free(const std::string& sql) const;
  // Runs `body` in one write transaction; rolls back and rethrows if it throws.
  void transaction(const std::function<void()>& body);
  // Ends job `id`'s open run, if any, at `end_s` in `state`.
  void close_run(int64_t id, JobState state, double end_s);
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace colo::sched
