#pragma once
// What `colo compare` runs: a workload's training jobs, one process each,
// and, where the workload has them, the same training in one process
// (fused arrays; models side by side on CUDA streams).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "colo/core/subprocess.h"

namespace colo::compare {

// One command of a workload. "{out}" anywhere in its argv stands for a fresh
// output directory of each run; a command that writes a sweep log there has its
// trained samples counted from that log, else `samples` is what it trains.
struct WorkloadCommand {
  std::string name;
  std::vector<std::string> argv;
  std::string workdir = ".";
  EnvironmentOverrides env;
  std::optional<int64_t> samples;
  std::optional<int64_t> mem_bytes;
  bool counts_from_sweep_log = false;  // samples from {out}/sweep.jsonl
};

struct CompareWorkload {
  std::string path;
  std::string kind;                      // "sweep" | "jobs" | "python"
  std::vector<WorkloadCommand> jobs;     // one process each
  std::optional<WorkloadCommand> fused;  // all of them in one process, fused
  std::optional<WorkloadCommand> streams;  // all of them in one process, on CUDA streams
  std::string fused_missing;             // why there is no fused command
  std::string streams_missing;
};

// Reads a workload file. A sweep file (a training spec with a [sweep] table)
// becomes one `colo sweep --only I` job per configuration, and its fused and
// side-by-side runs; `steps` > 0 caps every model's optimiser steps. Any
// other file is a job file (docs/job-format.md) whose jobs each declare
// `samples`, with optional [fused] and [streams] tables (command, samples)
// that do the same training in one process; without [streams], jobs that are
// all `colo train SPEC` get `colo train SPEC...` (side by side). A Python
// script (*.py) that calls colo.fuse.compare_workload becomes one process per
// configuration and one fused run ($COLO_PYTHON runs it, else python3; it is
// run once first to count its configurations). Throws InputError naming the
// file and field.
CompareWorkload parse_compare_workload(const std::string& path, const std::string& colo_executable, int64_t steps);

// `command`'s argv with "{out}" replaced by `out_dir`.
std::vector<std::string> with_output(const WorkloadCommand& command, const std::string& out_dir);

// Samples a finished run of `command` trained: its declared samples, or the
// sum over models of the last `samples` in `out_dir`/sweep.jsonl. nullopt
// when neither is known.
std::optional<int64_t> trained_samples(const WorkloadCommand& command, const std::string& out_dir);

}  // namespace colo::compare
