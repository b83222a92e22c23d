#pragma once
// `colo dist simulate`: the strategies on a simulated cluster whose workers
// differ in speed and whose links differ in bandwidth and latency. Time is
// virtual (the alpha-beta link model and each worker's compute time per
// sample); the training is real: the model of the cluster file learns from
// its real data set with the real optimiser, and in the asynchronous
// strategies every gradient is computed on the parameters the worker last
// pulled, so the staleness the timing implies is the staleness the
// optimiser sees. With `[simulate] train = false` only the timing runs (step
// time, throughput, staleness; no accuracy), for clusters of many workers.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/dist/cluster_spec.h"

namespace colo::dist {

// One strategy's simulated run.
struct SimulatedRun {
  std::string strategy;
  double simulated_s = 0;         // virtual time covered
  int64_t updates = 0;            // optimiser steps applied
  int64_t samples = 0;            // training samples consumed
  double step_s = 0;              // sync strategies: virtual time per step (before a switch)
  double mean_staleness = 0;      // async: updates applied between a worker's pull and its push
  double final_accuracy = 0;
  double time_to_target_s = -1;   // -1: target never reached
  int64_t switched_at_update = -1;
  std::vector<nlohmann::json> evaluations;  // {time_s, updates, samples, test_accuracy, train_loss}
};

// Simulates every strategy in spec.simulate.strategies; writes
// `<output>/simulate.jsonl` (one record per evaluation) and
// `<output>/simulate-summary.json`, and prints a table as strategies finish.
std::vector<SimulatedRun> simulate_cluster(const ClusterSpec& spec);

}  // namespace colo::dist
