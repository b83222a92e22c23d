#pragma once
// A job as a user submits it (`colo submit`, `colo run jobs.toml`).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/core/spec_table.h"
#include "colo/estimate/python_model.h"

namespace colo::sched {

struct JobSpec {
  std::string name;
  std::vector<std::string> command;   // argv; a string in the file runs under /bin/sh -c
  std::string workdir = ".";
  std::map<std::string, std::string> env;
  int gpus = 1;                        // GPUs it runs on at once (gang-placed; `mem` is per GPU)
  std::optional<int64_t> mem_bytes;    // peak GPU memory estimate; nullopt = unknown
  std::optional<double> sm_share;      // expected SM activity alone, 0..1
  std::optional<int64_t> samples;      // samples it trains in all (colo compare's throughput)
  int priority = 0;                    // higher first
  std::optional<std::pair<int, int>> array;  // inclusive range; each index is one job
  int array_index = -1;                // set on expanded jobs: COLO_ARRAY_INDEX
  // Where a Python job's model comes from, for a memory estimate ([job.model]).
  std::optional<estimate::PythonModelSource> model;
  // What colo read of the job's model when it was submitted (a `colo train`
  // spec's model, data, batch size and device; estimate::workload_of): jobs
  // with the same value train the same model at the same speed. "" = unknown.
  std::string workload;
  // A shared loader's data file (absolute) the job reads through; the runner
  // runs one producer per file for its jobs (loader_producers.h). "" = none.
  std::string loader;
};

// Reads one job from a table; its workdir comes back absolute, resolved
// against this process's working directory, and must exist. Throws
// InputError naming the file and field.
JobSpec parse_job_table(const SpecTable& table);

// Reads a job file: either one job at the top level, or `[[job]]` tables.
std::vector<JobSpec> parse_job_file(const std::string& path);

// What a job's numbers may be, in a job file and through colod's API alike.
inline constexpr int64_t kMostGpusPerJob = 64;
inline constexpr int64_t kMostPriority = 1000000;  // and -kMostPriority at the least
inline constexpr int64_t kMostSamples = int64_t{1} << 50;

// The most jobs one array may make (a job file's `array`, --array): beyond
// it, a typo (0-100000000) is refused rather than queued.
inline constexpr int kMostArrayJobs = 100000;

// An array's "FIRST-LAST" (inclusive, 0 <= FIRST <= LAST, at most
// kMostArrayJobs indices, nothing after it), or nullopt with what is wrong
// in `error` (the job file's `array` and --array alike).
std::optional<std::pair<int, int>> parse_array_range(const std::string& text, std::string* error);

// One job per array index (COLO_ARRAY_INDEX in env, "name[i]" as name);
// a job without an array comes back as is.
std::vector<JobSpec> expand_array(const JobSpec& spec);

// Why `spec` could never start on a host of `host_gpus` GPUs (it asks for
// more; a host without a GPU runs jobs one at a time, each as if given
// one, so it takes jobs of one GPU), or nullopt when it could.
std::optional<std::string> gpus_beyond_host(const JobSpec& spec, size_t host_gpus);

// Throws std::invalid_argument with gpus_beyond_host's reason for the first
// job that could never start on a host of `host_gpus` GPUs.
void check_gpus_fit(const std::vector<JobSpec>& specs, size_t host_gpus);

// What makes two jobs "the same command" for history: argv and workdir
// (array indices and other environment do not count).
std::string command_key(const JobSpec& spec);

// What makes two jobs "the same workload" for a predicted SM share: the
// model colo read for it (`workload`, a `colo train` spec's), or the model it
// names ([job.model]: builder, input, batch size, optimiser, in its working
// directory); and its GPU count. Jobs that differ only in learning rate,
// seed or other arguments train the same model at the same speed. "" for a
// job whose model colo does not know.
std::string workload_key(const JobSpec& spec);

nlohmann::json to_json(const JobSpec& spec);
JobSpec job_spec_from_json(const nlohmann::json& j);

}  // namespace colo::sched
