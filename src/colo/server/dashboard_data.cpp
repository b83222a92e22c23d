#include "colo/server/dashboard_data.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "colo/core/colo_command.h"
#include "colo/core/spec_table.h"

#include "colo/core/stopwatch.h"

namespace colo::server {

namespace {

bool ends_with_colo(const std::string& word) {
  return word.size() >= 4 && word.compare(word.size() - 4, 4, "colo") == 0;
}

}  // namespace

nlohmann::json gpu_history_json(const gpu::DeviceInfo& info, int position,
                                const std::vector<gpu::DeviceSample>& samples, double now_s,
                                const std::vector<sched::JobRecord>& jobs) {
  nlohmann::json out = {{"index", position}, {"name", info.name}, {"mem_total_bytes", info.mem_total_bytes},
                        {"now_s", now_s}, {"samples", nlohmann::json::array()}, {"jobs", nlohmann::json::array()}};
  for (const auto& s : samples) {
    nlohmann::json point = {{"t", s.time_s}, {"mem_used_bytes", s.mem_used_bytes}};
    if (s.sm_active || s.gpu_util) point["sm_activity"] = s.sm_active.value_or(s.gpu_util.value_or(0));
    if (s.power_w) point["power_w"] = *s.power_w;
    out["samples"].push_back(point);
  }
  double span_start_unix = samples.empty() ? unix_time_s() : samples.front().unix_s;
  for (const auto& j : jobs) {
    bool on_it = std::find(j.gpus.begin(), j.gpus.end(), position) != j.gpus.end();
    bool in_span = j.state == sched::JobState::kRunning || (j.end_s && *j.end_s >= span_start_unix);
    if (!on_it || !j.start_s || !in_span) continue;
    nlohmann::json job = {{"id", j.id}, {"name", j.spec.name}, {"state", sched::to_string(j.state)},
                          {"start_s", *j.start_s}, {"mem_estimate_bytes", j.spec.mem_bytes.value_or(0)}};
    job["end_s"] = j.state == sched::JobState::kRunning || !j.end_s ? nlohmann::json() : nlohmann::json(*j.end_s);
    out["jobs"].push_back(job);
  }
  return out;
}

namespace {

struct BarKind {
  const char* kind;
  const char* label;
  const char* colour;
};

// Every kind of bar, in the legend's order.
const BarKind kBarKinds[] = {
    {"QUEUED", "queued", "#ccc"},           {"RUNNING", "running", "#06c"},
    {"COMPLETED", "completed", "#080"},     {"OUT_OF_MEMORY", "died of GPU OOM, retried", "#e80"},
    {"REQUEUED", "lost, requeued", "#a60"}, {"FAILED", "failed", "#c00"},
    {"CANCELLED", "cancelled", "#999"},
};

// Where the bars of a job without stored runs come from: its record's one
// start and end, when it is running or has ended.
std::vector<sched::JobRun> runs_from_record(const sched::JobRecord& job) {
  if (!job.start_s) return {};
  if (job.state == sched::JobState::kRunning) return {{*job.start_s, std::nullopt, job.state}};
  if (sched::is_final(job.state) && job.end_s) return {{*job.start_s, job.end_s, job.state}};
  return {};
}

int waiting_rank(const sched::JobRecord& job) {
  if (job.state == sched::JobState::kRunning) return 0;
  return sched::is_final(job.state) ? 2 : 1;
}

}  // namespace

std::vector<sched::JobRecord> gantt_jobs(const std::vector<sched::JobRecord>& jobs, size_t most_rows) {
  std::vector<sched::JobRecord> chosen = jobs;
  std::stable_sort(chosen.begin(), chosen.end(), [](const sched::JobRecord& a, const sched::JobRecord& b) {
    int ra = waiting_rank(a), rb = waiting_rank(b);
    if (ra != rb) return ra < rb;
    return ra == 2 ? a.id > b.id : a.id < b.id;
  });
  if (chosen.size() > most_rows) chosen.resize(most_rows);
  std::sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return chosen;
}

nlohmann::json gantt_json(const std::vector<sched::JobRecord>& jobs,
                          const std::map<int64_t, std::vector<sched::JobRun>>& runs, double now_s) {
  double t0 = now_s;
  for (const auto& j : jobs) t0 = std::min(t0, j.submit_s);
  std::set<std::string> drawn;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& j : jobs) {
    nlohmann::json bars = nlohmann::json::array();
    auto bar = [&](const std::string& kind, double from, double to) {
      bars.push_back({{"kind", kind}, {"from_s", from - t0}, {"to_s", std::max(from, to) - t0}});
      drawn.insert(kind);
    };
    auto stored = runs.find(j.id);
    std::vector<sched::JobRun> its_runs =
        stored != runs.end() && !stored->second.empty() ? stored->second : runs_from_record(j);
    double waiting_since = j.submit_s;
    for (const auto& run : its_runs) {
      if (run.start_s > waiting_since) bar("QUEUED", waiting_since, run.start_s);
      double end = run.end_s.value_or(now_s);
      bar(sched::to_string(run.state), run.start_s, end);
      waiting_since = end;
    }
    if (j.state != sched::JobState::kRunning && (!sched::is_final(j.state) || its_runs.empty())) {
      bar("QUEUED", waiting_since, sched::is_final(j.state) ? j.end_s.value_or(now_s) : now_s);
    }
    std::string label = std::to_string(j.id) + " " + j.spec.name;
    if (j.oom_deaths) label += " (OOM x" + std::to_string(j.oom_deaths) + ")";
    rows.push_back({{"id", j.id}, {"label", label}, {"state", sched::to_string(j.state)}, {"bars", bars}});
  }
  nlohmann::json legend = nlohmann::json::array();
  for (const auto& k : kBarKinds) {
    if (drawn.count(k.kind)) legend.push_back({{"kind", k.kind}, {"label", k.label}, {"colour", k.colour}});
  }
  return {{"t0_s", t0}, {"now_s", now_s}, {"rows", rows}, {"legend", legend}};
}

std::string train_metrics_path(const sched::JobRecord& job) {
  std::vector<std::string> words = command_words(job.spec.command);
  bool trains = false;
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "train" && i > 0 && ends_with_colo(words[i - 1])) trains = true;
    if (words[i] == "--out" && i + 1 < words.size()) out = words[i + 1];
  }
  if (!trains || out.empty()) return "";
  // Only a shell expands $COLO_JOB_ID; an argv command gets the text as is.
  const auto& argv = job.spec.command;
  bool shell = argv.size() >= 2 && (argv[0] == "/bin/sh" || argv[0] == "sh") && argv[1] == "-c";
  for (const std::string var : {"${COLO_JOB_ID}", "$COLO_JOB_ID"}) {
    if (!shell) break;
    for (size_t at = out.find(var); at != std::string::npos; at = out.find(var)) {
      out.replace(at, var.size(), std::to_string(job.id));
    }
  }
  if (out.front() != '/') out = job.spec.workdir + "/" + out;
  return out + "/metrics.jsonl";
}


std::string sweep_log_path(const sched::JobRecord& job) {
  std::vector<std::string> words = command_words(job.spec.command);
  std::string file, out;
  for (size_t i = 1; i < words.size(); ++i) {
    if (words[i] == "sweep" && ends_with_colo(words[i - 1]) && i + 1 < words.size()) file = words[i + 1];
    if (words[i] == "--output" && i + 1 < words.size()) out = words[i + 1];
  }
  if (file.empty()) return "";
  auto relative = [&](const std::string& p) { return !p.empty() && p.front() == '/' ? p : job.spec.workdir + "/" + p; };
  if (out.empty()) {
    try {
      out = SpecTable::root(relative(file)).string_or("output", "");
    } catch (const std::exception&) {
      return "";
    }
  }
  return out.empty() ? "" : relative(out) + "/sweep.jsonl";
}

namespace {

// Whether a sweep.jsonl record is a model's epoch with fields of the types
// colo sweep writes (the job writes the file: anything else is skipped).
bool is_epoch_record(const nlohmann::json& r) {
  auto number_if_there = [&r](const char* key) { return !r.contains(key) || r[key].is_number(); };
  return r.contains("model") && r["model"].is_number_integer() && r.contains("epoch") && r["epoch"].is_number() &&
         (!r.contains("array") || r["array"].is_number_integer()) && number_if_there("test_accuracy") &&
         number_if_there("loss");
}

}  // namespace

nlohmann::json sweep_ranking(const nlohmann::json& records) {
  std::map<int64_t, nlohmann::json> models;
  for (const auto& r : records) {
    if (!is_epoch_record(r)) continue;
    int64_t id = r["model"].get<int64_t>();
    nlohmann::json& m = models[id];
    if (m.is_null()) {
      m = {{"model", id}, {"values", r.value("values", nlohmann::json::object())}, {"array", r.value("array", 0)},
           {"best_test_accuracy", 0.0}, {"curve", nlohmann::json::array()}};
    }
    double accuracy = r.value("test_accuracy", 0.0);
    m["array"] = r.value("array", m["array"].get<int64_t>());  // an OOM split moves a model to a new array
    m["epochs"] = r["epoch"];
    m["test_accuracy"] = accuracy;
    m["loss"] = r.value("loss", 0.0);
    m["best_test_accuracy"] = std::max(m["best_test_accuracy"].get<double>(), accuracy);
    m["curve"].push_back({r["epoch"], accuracy, r.value("loss", 0.0)});
  }
  nlohmann::json ranked = nlohmann::json::array();
  for (auto& [id, m] : models) ranked.push_back(m);
  std::stable_sort(ranked.begin(), ranked.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["test_accuracy"].get<double>() > b["test_accuracy"].get<double>();
  });
  return ranked;
}

nlohmann::json read_metrics(const std::string& path) {
  nlohmann::json records = nlohmann::json::array();
  if (path.empty()) return records;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto record = nlohmann::json::parse(line, nullptr, false);
    if (!record.is_discarded() && record.is_object()) records.push_back(record);
  }
  return records;
}

}  // namespace colo::server
