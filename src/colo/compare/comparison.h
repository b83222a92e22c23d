#pragma once
// One `colo compare`: a workload run at every chosen level of GPU sharing,
// round by round, and what the runs say.

#include <cstdint>
#include <string>

#include "colo/compare/levels.h"

namespace colo::compare {

// What a user asks of one comparison.
struct ComparisonOptions {
  std::string workload;      // a sweep file, a job file or a Python script
  std::string levels;        // comma-separated level names; empty = all
  std::string out = "runs/compare";
  int64_t steps = 0;         // sweep files: optimiser steps per model (0: the spec's epochs)
  int repeat = 3;            // measured rounds of every level (the spread needs several)
  int warmup = 0;            // rounds run first and left out of the figures
  LevelOptions level;
};

// Runs the workload at each chosen level, the levels interleaved within
// each round (warm-up rounds first), weighs every round by its sequential
// run, prints the table and the recommendations for throughput and energy,
// and writes <out>/summary.json. Progress goes to stderr. A level is
// recommended only when it is told apart from the runner-up (Recommendation).
// Returns whether any level was measured. Throws InputError for an
// unknown level, a repeat below 1, a bad workload or an unwritable --out.
bool run_comparison(const ComparisonOptions& options);

}  // namespace colo::compare
