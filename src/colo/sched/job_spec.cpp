#include "colo/sched/job_spec.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/units.h"
#include "colo/sched/job_name.h"

namespace colo::sched {
namespace {

std::vector<std::string> read_command(const SpecTable& t) {
  if (!t.has("command")) t.fail("command", "missing required field (a string or an array of strings)");
  std::optional<std::string> line;
  try {
    line = t.string("command");
  } catch (const InputError&) {  // not a string: an array of strings, or neither
  }
  if (line) {
    if (line->empty()) t.fail("command", "expected a non-empty command");
    return {"/bin/sh", "-c", *line};
  }
  std::vector<std::string> parts;
  try {
    parts = t.strings_or("command", {});
  } catch (const InputError&) {
    t.fail("command", "expected a string or a non-empty array of strings");
  }
  if (parts.empty()) t.fail("command", "expected a string or a non-empty array of strings");
  return parts;
}

std::optional<std::pair<int, int>> parse_array(const SpecTable& t) {
  if (!t.has("array")) return std::nullopt;
  std::string error;
  auto range = parse_array_range(t.string("array"), &error);
  if (!range) t.fail("array", error);
  return range;
}

estimate::PythonModelSource parse_model(const SpecTable& m) {
  estimate::PythonModelSource model;
  if (!m.has("builder")) m.fail("builder", "missing: \"module:function\" that returns the nn.Module");
  model.builder = m.string("builder");
  if (!estimate::is_builder_name(model.builder)) {
    m.fail("builder", "expected \"module:function\", got \"" + model.builder + "\"");
  }
  if (!m.has("input")) m.fail("input", "missing: one sample's shape, e.g. [3, 224, 224]");
  model.input = m.integers_or("input", {}, 1);
  if (model.input.empty()) m.fail("input", "expected one sample's shape, e.g. [3, 224, 224]");
  model.vocab = m.integer_or("vocab", 0, 0, int64_t{1} << 40);
  model.batch_size = m.integer_or("batch_size", 32, 1, int64_t{1} << 30);
  model.optimizer = m.choice_or("optimizer", "adam", estimate::user_model_optimizers());
  model.eval_batch_size = m.integer_or("eval_batch_size", 0, 0, int64_t{1} << 30);
  model.autocast = m.choice_or("autocast", "none", estimate::user_model_autocasts());
  if (model.autocast == "none") model.autocast.clear();
  model.keep_output = m.boolean_or("keep_output", true);
  model.set_to_none = m.boolean_or("set_to_none", true);
  model.accumulation_steps = m.integer_or("accumulation_steps", 1, 1, 1 << 20);
  model.zero_grad = m.choice_or("zero_grad", "auto", estimate::user_model_zero_grads());
  if (model.zero_grad == "auto") model.zero_grad.clear();
  m.reject_unknown();
  return model;
}

nlohmann::json model_to_json(const estimate::PythonModelSource& m) {
  return {{"builder", m.builder},         {"input", m.input},
          {"vocab", m.vocab},             {"batch_size", m.batch_size},
          {"optimizer", m.optimizer},     {"eval_batch_size", m.eval_batch_size},
          {"autocast", m.autocast},       {"keep_output", m.keep_output},
          {"set_to_none", m.set_to_none}, {"accumulation_steps", m.accumulation_steps},
          {"zero_grad", m.zero_grad}};
}

estimate::PythonModelSource model_from_json(const nlohmann::json& j) {
  estimate::PythonModelSource m;
  m.builder = j.at("builder").get<std::string>();
  m.input = j.at("input").get<std::vector<int64_t>>();
  m.vocab = j.value("vocab", int64_t{0});
  m.batch_size = j.value("batch_size", int64_t{32});
  m.optimizer = j.value("optimizer", std::string("adam"));
  m.eval_batch_size = j.value("eval_batch_size", int64_t{0});
  m.autocast = j.value("autocast", std::string());
  m.keep_output = j.value("keep_output", true);
  m.set_to_none = j.value("set_to_none", true);
  m.accumulation_steps = j.value("accumulation_steps", int64_t{1});
  m.zero_grad = j.value("zero_grad", std::string());
  return m;
}

}  // namespace

JobSpec parse_job_table(const SpecTable& t) {
  JobSpec spec;
  spec.command = read_command(t);
  spec.name = t.string_or("name", default_job_name(spec.command));
  // Relative to where the file is submitted from, whichever process runs
  // the job later (colod has a working directory of its own).
  spec.workdir = absolute_path(t.string_or("workdir", spec.workdir));
  if (!is_directory(spec.workdir)) t.fail("workdir", "an existing directory; there is none at " + spec.workdir);
  if (auto env = t.table("env")) {
    for (const auto& key : env->keys()) spec.env[key] = env->string(key);
  }
  spec.gpus = static_cast<int>(t.integer_or("gpus", 1, 1, kMostGpusPerJob));
  if (t.has("mem")) {
    std::string text = t.string("mem");
    auto bytes = parse_bytes(text);
    // A job needing no memory is a slip (a 0 or a lost unit): it would be placed anywhere as if it used none.
    if (!bytes || *bytes <= 0) {
      t.fail("mem", "expected a size above zero such as \"6GiB\" or \"512MiB\", got \"" + text + "\"");
    }
    spec.mem_bytes = *bytes;
  }
  if (t.has("sm_share")) spec.sm_share = t.number_or("sm_share", 0.5, 0.0, 1.0);
  spec.priority = static_cast<int>(t.integer_or("priority", 0, -kMostPriority, kMostPriority));
  if (t.has("samples")) spec.samples = t.integer_or("samples", 1, 1, kMostSamples);
  spec.array = parse_array(t);
  if (auto model = t.table("model")) spec.model = parse_model(*model);
  if (t.has("loader")) {
    std::string file = t.string("loader");
    if (!path_exists(file)) t.fail("loader", "a shared loader's data file (DATA.toml); no such file: " + file);
    spec.loader = absolute_path(file);
  }
  t.reject_unknown();
  return spec;
}

std::vector<JobSpec> parse_job_file(const std::string& path) {
  SpecTable root = SpecTable::root(path);
  std::vector<JobSpec> jobs;
  if (root.has("job")) {
    auto tables = root.tables("job");
    if (tables.empty()) root.fail("job", "expected one or more [[job]] tables");
    for (const auto& table : tables) jobs.push_back(parse_job_table(table));
    root.reject_unknown();
  } else if (!root.has("command") && !root.has("name")) {  // neither [[job]] tables nor a job ([[jobs]], say)
    std::string found;
    for (const auto& key : root.keys()) found += (found.empty() ? "" : ", ") + key;
    root.fail("job", "expected [[job]] tables, or one job's fields (command = ...) at the top; found " +
                         (found.empty() ? std::string("nothing") : found));
  } else {
    jobs.push_back(parse_job_table(root));
  }
  return jobs;
}

std::optional<std::pair<int, int>> parse_array_range(const std::string& text, std::string* error) {
  int first = 0, last = 0;
  char dash = 0;
  std::istringstream in(text);
  if (!(in >> first >> dash >> last) || dash != '-' || first < 0 || last < first || !(in >> std::ws).eof()) {
    *error = "expected a range \"FIRST-LAST\" such as \"0-31\", got \"" + text + "\"";
    return std::nullopt;
  }
  if (last - first >= kMostArrayJobs) {
    *error = "expected at most " + std::to_string(kMostArrayJobs) + " jobs, got \"" + text + "\"";
    return std::nullopt;
  }
  return std::make_pair(first, last);
}

std::vector<JobSpec> expand_array(const JobSpec& spec) {
  if (!spec.array) return {spec};
  std::vector<JobSpec> jobs;
  for (int i = spec.array->first; i <= spec.array->second; ++i) {
    JobSpec one = spec;
    one.array.reset();
    one.array_index = i;
    one.name = spec.name + "[" + std::to_string(i) + "]";
    one.env["COLO_ARRAY_INDEX"] = std::to_string(i);
    jobs.push_back(one);
  }
  return jobs;
}

std::string command_key(const JobSpec& spec) {
  nlohmann::json key = {spec.command, spec.workdir};
  return key.dump();
}

std::string workload_key(const JobSpec& spec) {
  if (!spec.workload.empty()) return nlohmann::json({spec.workload, spec.gpus}).dump();
  if (!spec.model) return "";
  const estimate::PythonModelSource& m = *spec.model;
  nlohmann::json key = {"model", m.builder, m.input, m.vocab, m.batch_size, m.optimizer, m.eval_batch_size,
                        spec.workdir, spec.gpus};
  if (!m.autocast.empty()) key.push_back(m.autocast);  // another precision trains at another share
  return key.dump();
}

nlohmann::json to_json(const JobSpec& s) {
  nlohmann::json j = {{"name", s.name}, {"command", s.command}, {"workdir", s.workdir}, {"env", s.env},
                      {"gpus", s.gpus}, {"priority", s.priority}, {"array_index", s.array_index}};
  if (s.mem_bytes) j["mem_bytes"] = *s.mem_bytes;
  if (s.sm_share) j["sm_share"] = *s.sm_share;
  if (s.samples) j["samples"] = *s.samples;
  if (s.model) j["model"] = model_to_json(*s.model);
  if (!s.workload.empty()) j["workload"] = s.workload;
  if (!s.loader.empty()) j["loader"] = s.loader;
  return j;
}

std::optional<std::string> gpus_beyond_host(const JobSpec& spec, size_t host_gpus) {
  if (static_cast<size_t>(spec.gpus) <= std::max<size_t>(host_gpus, 1)) return std::nullopt;
  return "job '" + spec.name + "' asks for " + std::to_string(spec.gpus) + " GPUs; this host has " +
         (host_gpus == 0 ? std::string("none (without a GPU, jobs run one at a time, each as if given one)")
                         : std::to_string(host_gpus));
}

void check_gpus_fit(const std::vector<JobSpec>& specs, size_t host_gpus) {
  for (const JobSpec& s : specs) {
    if (auto beyond = gpus_beyond_host(s, host_gpus)) throw std::invalid_argument(*beyond);
  }
}

JobSpec job_spec_from_json(const nlohmann::json& j) {
  JobSpec s;
  s.name = j.at("name").get<std::string>();
  s.command = j.at("command").get<std::vector<std::string>>();
  s.workdir = j.value("workdir", ".");
  s.env = j.value("env", std::map<std::string, std::string>{});
  s.gpus = j.value("gpus", 1);
  s.priority = j.value("priority", 0);
  s.array_index = j.value("array_index", -1);
  if (j.contains("mem_bytes")) s.mem_bytes = j["mem_bytes"].get<int64_t>();
  if (j.contains("sm_share")) s.sm_share = j["sm_share"].get<double>();
  if (j.contains("samples")) s.samples = j["samples"].get<int64_t>();
  if (j.contains("model")) s.model = model_from_json(j["model"]);
  s.workload = j.value("workload", "");
  s.loader = j.value("loader", "");
  return s;
}

}  // namespace colo::sched
