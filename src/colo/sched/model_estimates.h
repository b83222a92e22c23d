#pragma once
// Memory estimates of jobs' [job.model] tables and of the specs of their
// `colo train`/`colo sweep` commands, made off the scheduler's critical
// path: in background threads, several at once, each table or spec
// estimated once (identical ones share one estimate), and every answer kept
// in the job store, so later runs on the store ask nothing again.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "colo/sched/job_spec.h"
#include "colo/sched/model_estimate.h"
#include "colo/sched/store.h"

namespace colo::sched {

// Estimates one job's model; called from background threads, several at
// once, so it must be thread-safe. Must return within its own time limit
// (an estimate that times out is an unknown one).
using EstimateModel = std::function<ModelEstimate(const JobSpec& job)>;

// The content a [job.model] table is estimated by: its builder, input,
// vocab, batch, optimiser and evaluation batch, in its working directory.
// "" for a job without a model table.
std::string model_table_key(const JobSpec& job);

// What a job's estimate is keyed by: its model table's key, else, for a
// `colo train|sweep FILE.toml` command, the file's path and content and the
// words after it (a changed spec is estimated again); "" for any other job
// and for a spec file that cannot be read.
std::string estimate_key(const JobSpec& job);

class ModelEstimates {
 public:
  // At most `parallel` (>= 1) estimates run at once. Answers are stored
  // under `version` (what made them, scheduler_estimator_version()): a store
  // answers only from estimates of the same version. One that is
  // `transient` is kept for this object's life only.
  ModelEstimates(JobStore& store, EstimateModel estimate, int parallel, std::string version = "");
  // Does not wait for estimates still running: their threads finish on
  // their own and their answers are dropped.
  ~ModelEstimates();
  ModelEstimates(const ModelEstimates&) = delete;
  ModelEstimates& operator=(const ModelEstimates&) = delete;

  enum class Status { kPending, kKnown, kUnknown };
  struct Answer {
    Status status = Status::kPending;
    int64_t bytes = 0;    // kKnown: the model's peak, no margin
    std::string reason;   // kUnknown: why; kPending: since when it waits
  };

  // The estimate of `job` (estimate_key): from the store when any run made
  // it before, else pending (its estimate starts now, or when a slot frees,
  // unless one for the same key is already under way). A job without a key
  // is kUnknown. Not thread-safe: the scheduler's thread only.
  Answer lookup(const JobSpec& job);

  // Estimates running or queued now.
  int in_flight() const;

 private:
  struct Shared;
  void start_queued();
  JobStore& store_;
  std::string version_;
  std::map<std::string, ModelEstimate> transient_;  // by key: unknown for now, asked again by a later run
  std::shared_ptr<Shared> shared_;  // outlives this object while threads run
};

}  // namespace colo::sched
