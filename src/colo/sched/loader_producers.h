#pragma once
// The shared-loader producers a runner starts for its jobs (issue 19): jobs
// that name the same data file (`loader = "DATA.toml"` in a job) read one
// `colo loader serve DATA.toml` on this host, started when the first of
// them starts and stopped when the last of them ends. The runner launches
// those jobs once their producer has filled its ring (ready()): launched
// together, the producer's first fill and the jobs' own CPU-bound set-up
// (importing torch, building models) slow each other down, and the first
// job to train waits for data.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "colo/core/stopwatch.h"
#include "colo/core/subprocess.h"

namespace colo::sched {

// The environment variable that tells a job which data file its producer
// serves (colo.data.SharedLoader(None, ...) reads it).
inline constexpr const char* kLoaderVariable = "COLO_LOADER";

class LoaderProducers {
 public:
  // How long a producer may take to fill its ring before its jobs are
  // launched anyway (ready()): a large ring of large images on a busy host
  // may take long to fill, and the jobs then read what there is.
  static constexpr double kFillWaitS = 30;

  // `colo_program` runs `loader serve`; producer logs go to
  // `log_dir`/loader-<k>.log, and each writes `log_dir`/loader-<k>.ready
  // once its ring is full (`--ready-file`). Starts nothing.
  // A producer not started here is held again every `hold_renew_s` while
  // this scheduler's jobs on it run (begin_round).
  LoaderProducers(std::string colo_program, std::string log_dir, double fill_wait_s = kFillWaitS,
                  double hold_renew_s = kHoldRenewS);
  // Stops every producer still running (SIGTERM: each removes its shared
  // memory as it exits), as release() does.
  ~LoaderProducers();
  LoaderProducers(const LoaderProducers&) = delete;
  LoaderProducers& operator=(const LoaderProducers&) = delete;

  // Job `job_id` reads through the producer of `data_file` (an absolute
  // path; every spelling of it, through links or ".", shares one producer):
  // starts one when none runs for it, or when the last one exited (but not
  // for a job acquired before and not yet released: the producer it waits
  // for stays the one it gets, so that one that failed is not started
  // again every round). Idempotent for a job that holds the producer.
  // When a producer not started here already answers at the file's address
  // (a user's `colo loader serve`, or one a runner before a restart left
  // running), its jobs read from that one: ready at once, in no start group,
  // and never stopped here (its jobs end with colo.data.ProducerLost if it
  // goes); the next job after they all ended looks again. Each job acquired
  // on such a producer holds it for kHoldForLaunchS ("hold"), and the hold
  // is renewed while its jobs run, so that the scheduler that started it
  // does not stop it before they connect or while they read.
  // Throws std::runtime_error when the program cannot be started. A
  // producer that fails after starting (a bad data file) is seen by its
  // consumers, which end with a clear error (colo.data.ProducerLost).
  // A producer started here gets `env` added to this process's environment
  // (under MPS, the daemon's client variables).
  void acquire(const std::string& data_file, int64_t job_id, const EnvironmentOverrides& env = {});

  // Whether the jobs of `data_file`'s producer (acquired before; false for
  // a file no job acquired) may be launched: once it has written its ready
  // file, or exited (its jobs then end with its error, as a job that
  // started with it would), or `fill_wait_s` after it was started. Once
  // true, true for as long as that producer runs.
  bool ready(const std::string& data_file);

  // Why `data_file`'s producer exited before it filled its ring (its log's
  // last line, e.g. "colo: error: .../images: a directory of class
  // folders"), once ready() has seen it; empty while it runs, filled its
  // ring, or no job acquired it. Its jobs would only find no producer.
  std::string failure(const std::string& data_file) const;

  // A scheduling round begins: finds which producers became ready since
  // the last (ready()'s checks, for all of them at once). Until end_round(),
  // ready() answers from that, so that every job of a producer launched in
  // this round sees it alike. Renews the holds due (hold_renew_s).
  void begin_round();
  // The round's launches are done: writes, for every producer whose start
  // group was open, how many jobs joined it (start_group_size_file).
  void end_round();

  // The start group (colo/core/loader_start_group.h) of a job about to be
  // launched on `data_file`'s producer: its ready file, in the round in
  // which the producer became ready; "" after that round, and for a
  // producer that never wrote it. The job counts in it once launched
  // (joined_start_group). A member that ends leaves the group, and the
  // size written drops with it (release): the others do not wait for a job
  // that died before it read.
  std::string start_group_of(const std::string& data_file) const;
  void joined_start_group(const std::string& data_file, int64_t job_id);

  // Job `job_id` ended: its producer stops once no other job uses it,
  // unless consumers that are not this scheduler's jobs still read from it
  // (another scheduler's jobs, which found it serving): it is then left
  // running, and exits once they have all gone for kDetachedIdleExitS. No
  // effect for a job that used none.
  void release(int64_t job_id);

  // Leaves every producer running for the jobs left running (detach): each
  // exits on its own once its consumers have all gone for
  // kDetachedIdleExitS.
  void detach();
  static constexpr double kDetachedIdleExitS = 60;
  // How long a producer not started here is held for a job about to read it
  // (its start-up: importing torch, building its model).
  static constexpr double kHoldForLaunchS = 60;
  static constexpr double kHoldRenewS = 20;

  // The data files whose producers run now, and how many have been started.
  std::vector<std::string> running();
  // The process ids of the producers this scheduler started that still run.
  std::vector<int> pids() const;
  int64_t started() const { return started_; }

 private:
  struct Producer {
    std::unique_ptr<ChildProcess> process;
    std::set<int64_t> jobs;
    std::string log;
    std::string ready_file;  // written by it once its ring is full
    Stopwatch since_start;
    bool ready = false;
    std::string failure;  // it exited before filling its ring: why
    bool start_group_open = false;   // in the round its ring was found full: jobs launched join its group
    std::set<int64_t> start_group;   // the jobs in it that have not ended
    std::string served_by;           // the address of a producer not started here that serves the file
    Stopwatch since_hold;            // since this scheduler last held it (served_by)
  };
  // Stops `producer` (release()), or leaves it running for consumers that
  // are not this scheduler's jobs.
  static void stop(const std::string& data_file, Producer& producer);
  std::string colo_program_, log_dir_;
  double fill_wait_s_, hold_renew_s_;
  std::map<std::string, Producer> producers_;  // by data file
  std::map<int64_t, std::string> job_data_;    // job -> data file
  int64_t started_ = 0;
  bool in_round_ = false;  // between begin_round and end_round
};

}  // namespace colo::sched
