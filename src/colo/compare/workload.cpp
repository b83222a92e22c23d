#include "colo/compare/workload.h"

#include <cstdlib>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"
#include "colo/core/spec_table.h"
#include "colo/data/data_spec.h"
#include "colo/estimate/default_chain.h"
#include "colo/fuse/sweep_spec.h"
#include "colo/sched/job_spec.h"
#include "colo/train/train_spec.h"

namespace colo::compare {
namespace {

WorkloadCommand sweep_command(const std::string& colo, const std::string& path, const std::string& name,
                              std::vector<std::string> extra, int64_t steps) {
  WorkloadCommand c;
  c.name = name;
  c.argv = {colo, "sweep", path, "--output", "{out}"};
  c.argv.insert(c.argv.end(), extra.begin(), extra.end());
  if (steps > 0) c.argv.insert(c.argv.end(), {"--max-steps", std::to_string(steps)});
  c.counts_from_sweep_log = true;
  return c;
}

CompareWorkload sweep_workload(const std::string& path, const std::string& colo, int64_t steps) {
  fuse::SweepSpec spec = fuse::parse_sweep_spec(path);
  std::vector<fuse::SweepConfig> configs = fuse::expand_sweep(spec);
  CompareWorkload w;
  w.path = path;
  w.kind = "sweep";
  for (const fuse::SweepConfig& config : configs) {
    std::string i = std::to_string(config.index);
    w.jobs.push_back(sweep_command(colo, path, "config-" + i, {"--only", i, "--max-array", "1"}, steps));
  }
  w.fused = sweep_command(colo, path, "fused", {}, steps);
  w.streams = sweep_command(colo, path, "streams", {"--max-array", "1", "--side-by-side"}, steps);
  return w;
}

WorkloadCommand from_job(const sched::JobSpec& spec, const std::string& path, const std::string& field) {
  if (!spec.samples) {
    throw InputError(path, field + ".samples", "the samples the job trains in all (its throughput's numerator)");
  }
  WorkloadCommand c;
  c.name = spec.name;
  c.argv = spec.command;
  c.workdir = spec.workdir;
  c.env = EnvironmentOverrides(spec.env.begin(), spec.env.end());
  c.samples = spec.samples;
  c.mem_bytes = spec.mem_bytes;
  return c;
}

// Jobs that are all `colo train SPEC` can also train side by side in one
// process (one data pass where their specs agree, each its own otherwise):
// that command, or why not.
std::optional<WorkloadCommand> side_by_side_of(const std::vector<sched::JobSpec>& jobs, const std::string& colo,
                                               std::string* why_not) {
  std::vector<std::string> paths;
  int64_t samples = 0;
  for (const sched::JobSpec& job : jobs) {
    std::string spec_path = estimate::train_spec_of(job.command, job.workdir);
    if (spec_path.empty()) {
      *why_not = "job " + job.name + " is not `colo train SPEC`, and the file has no [streams] command";
      return std::nullopt;
    }
    paths.push_back(spec_path);
    samples += *job.samples;
  }
  WorkloadCommand c;
  c.name = "streams";
  c.argv = {colo, "train"};
  c.argv.insert(c.argv.end(), paths.begin(), paths.end());
  c.argv.insert(c.argv.end(), {"--out", "{out}"});
  c.samples = samples;
  return c;
}

CompareWorkload job_workload(const std::string& path, const std::string& colo) {
  SpecTable root = SpecTable::root(path);
  CompareWorkload w;
  w.path = path;
  w.kind = "jobs";
  if (!root.has("job")) root.fail("job", "[[job]] tables (a job file), or a sweep file with a [sweep] table");
  std::vector<sched::JobSpec> specs;
  for (const SpecTable& table : root.tables("job")) {
    for (const sched::JobSpec& spec : sched::expand_array(sched::parse_job_table(table))) {
      w.jobs.push_back(from_job(spec, path, "job"));
      specs.push_back(spec);
    }
  }
  if (w.jobs.empty()) root.fail("job", "one or more [[job]] tables");
  if (auto table = root.table("fused")) w.fused = from_job(sched::parse_job_table(*table), path, "fused");
  if (auto table = root.table("streams")) w.streams = from_job(sched::parse_job_table(*table), path, "streams");
  w.fused_missing = "the job file has no [fused] command (fused arrays need models colo can fuse: a sweep file)";
  root.reject_unknown();
  if (!w.streams) w.streams = side_by_side_of(specs, colo, &w.streams_missing);
  return w;
}

// The interpreter that runs Python workloads: $COLO_PYTHON, else python3.
std::string python_interpreter() {
  const char* chosen = std::getenv("COLO_PYTHON");
  return chosen && *chosen ? chosen : "python3";
}

// How many configurations a Python workload script sweeps: it runs once with
// COLO_COMPARE_ROLE=describe:FILE (colo.fuse.compare_workload writes them).
int64_t python_configurations(const std::string& path, const std::string& python) {
  const std::string dir = make_unique_directory(temp_directory(), "colo-compare-describe");
  const std::string answer = dir + "/configs.json", log = dir + "/describe.log";
  ChildProcess describe({python, path}, {{"COLO_COMPARE_ROLE", "describe:" + answer}}, log);
  int code = exit_code_of(describe.wait());
  nlohmann::json told = nlohmann::json::parse(path_exists(answer) ? read_file(answer) : "", nullptr, false);
  std::string output = path_exists(log) ? file_tail(log, 400) : "";
  remove_tree(dir);
  if (code != 0 || !told.is_object() || !told.contains("configs") || !told["configs"].is_number_integer()) {
    throw InputError(path, "", "a Python workload must call colo.fuse.compare_workload(...) when run (" + python +
                                   " " + path + " exited " + std::to_string(code) +
                                   (output.empty() ? "" : ": " + output) + ")");
  }
  return told["configs"].get<int64_t>();
}

WorkloadCommand python_command(const std::string& python, const std::string& path, const std::string& name,
                               const std::string& role, int64_t steps) {
  WorkloadCommand c;
  c.name = name;
  c.argv = {"env", "COLO_COMPARE_OUT={out}", python, path};
  c.env = {{"COLO_COMPARE_ROLE", role}};
  if (steps > 0) c.env["COLO_COMPARE_STEPS"] = std::to_string(steps);
  c.counts_from_sweep_log = true;
  return c;
}

CompareWorkload python_workload(const std::string& path, int64_t steps) {
  const std::string python = python_interpreter();
  if (!path_exists(path)) throw InputError(path, "", "no such file");
  CompareWorkload w;
  w.path = path;
  w.kind = "python";
  const int64_t configs = python_configurations(path, python);
  for (int64_t i = 0; i < configs; ++i) {
    w.jobs.push_back(python_command(python, path, "config-" + std::to_string(i), "only:" + std::to_string(i), steps));
  }
  w.fused = python_command(python, path, "fused", "fused", steps);
  w.streams_missing = "colo.fuse trains arrays one after another, not side by side on streams";
  return w;
}

}  // namespace

CompareWorkload parse_compare_workload(const std::string& path, const std::string& colo_executable, int64_t steps) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".py") == 0) return python_workload(path, steps);
  SpecTable root = SpecTable::root(path);  // throws InputError for a missing or malformed file
  return root.has("sweep") ? sweep_workload(path, colo_executable, steps) : job_workload(path, colo_executable);
}

std::vector<std::string> with_output(const WorkloadCommand& command, const std::string& out_dir) {
  std::vector<std::string> argv = command.argv;
  const std::string token = "{out}";
  for (std::string& arg : argv) {
    for (size_t at = arg.find(token); at != std::string::npos; at = arg.find(token, at + out_dir.size())) {
      arg.replace(at, token.size(), out_dir);
    }
  }
  return argv;
}

std::optional<int64_t> trained_samples(const WorkloadCommand& command, const std::string& out_dir) {
  if (!command.counts_from_sweep_log) return command.samples;
  std::ifstream in(out_dir + "/sweep.jsonl");
  if (!in) return std::nullopt;
  std::map<int64_t, int64_t> by_model;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.contains("model") && record.contains("samples")) {
      by_model[record["model"].get<int64_t>()] = record["samples"].get<int64_t>();
    }
  }
  if (by_model.empty()) return std::nullopt;
  int64_t total = 0;
  for (const auto& [model, samples] : by_model) total += samples;
  return total;
}

}  // namespace colo::compare
