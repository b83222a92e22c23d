#pragma once
// A worker's whole training state (parameters, optimiser, strategy, random
// generator, the loop's counters and place in the data) into and out of
// colo dist's checkpoints (run_checkpoint.h).

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "colo/dist/cluster_spec.h"
#include "colo/dist/strategy.h"

namespace colo::dist {

class Communicator;
class FlatModel;
class FlatOptimizer;

// What a worker's loop counts, and where it is in the data.
struct WorkerCounters {
  int64_t step = 0;           // optimiser steps done
  int64_t epoch = 0;          // the epoch the next step reads from (0-based)
  int64_t batch = 0;          // batches of that epoch already read
  int64_t samples = 0;        // this worker's samples trained
  int64_t bytes_sent = 0;
  double compute_s = 0;       // sums over the steps
  double communication_s = 0;
  double waiting_s = 0;
  double wall_s = 0;          // the run's wall time so far, evaluations included
  double eval_s = 0;          // of which evaluating
  double checkpoint_s = 0;    // of which writing checkpoints
  double time_to_target_s = -1;
  double test_accuracy = 0;
  double test_loss = 0;

  nlohmann::json to_json() const;
  static WorkerCounters from_json(const nlohmann::json& values);
};

// Every worker calls this after the same step: the others write their
// files, all wait until every worker has finished that step (group
// barrier; no exchange is in flight then), worker 0 writes the run's
// parameters and optimiser state (strategy.run_state(), fetched from the
// servers in a parameter-server phase) with its own and commits the step,
// and once all know it is committed each removes its other files. Throws
// on an I/O failure.
void checkpoint_worker(const ClusterSpec& spec, int rank, Communicator& group, const FlatModel& model,
                       Strategy& strategy, const WorkerCounters& counters);

// Before a resume starts any process: a checkpoint was committed, by a run
// of this strategy, number of workers and batch size. Throws InputError
// naming OUTPUT/checkpoint/latest.json otherwise.
void check_resumable(const ClusterSpec& spec);

// What a resumed worker continues from.
struct ResumedWorker {
  WorkerCounters counters;
  StrategyState strategy;  // for the strategy's restore(), once it is made
};

// Loads the committed checkpoint's parameters and optimiser state into
// `model` and `optimizer`, and this worker's CPU generator state; call it
// before making the strategy (a parameter server's starts its servers from
// them). Throws InputError naming the checkpoint when there is none or it
// belongs to another run (strategy, workers, model size, optimiser).
ResumedWorker resume_worker(const ClusterSpec& spec, int rank, FlatModel& model, FlatOptimizer& optimizer);

}  // namespace colo::dist
