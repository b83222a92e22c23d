#include "colo/slurm/state_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <spdlog/spdlog.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo::slurm {
namespace {

std::string safe_file_name(const std::string& name) {
  std::string out;
  for (char c : name) out += isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  return out.empty() ? "job" : out;
}

template <typename T>
std::optional<T> optional_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<T>();
}

}  // namespace

nlohmann::json to_json(const SubmittedJob& job) {
  nlohmann::json j = {{"slurm_id", job.slurm_id}, {"name", job.name},         {"gres", job.gres},
                      {"attempt", job.attempt},   {"retry_of", job.retry_of}, {"submit_unix", job.submit_unix}};
  j["mem_bytes"] = job.mem_bytes ? nlohmann::json(*job.mem_bytes) : nlohmann::json();
  if (job.array) j["array"] = {job.array->first, job.array->second};
  return j;
}

SubmittedJob submitted_from_json(const nlohmann::json& j) {
  SubmittedJob job;
  job.slurm_id = j.at("slurm_id").get<std::string>();
  job.name = j.value("name", "");
  job.gres = j.value("gres", "");
  job.mem_bytes = optional_field<int64_t>(j, "mem_bytes");
  if (j.contains("array")) job.array = std::make_pair(j["array"].at(0).get<int>(), j["array"].at(1).get<int>());
  job.attempt = j.value("attempt", 1);
  job.retry_of = j.value("retry_of", "");
  job.submit_unix = j.value("submit_unix", 0.0);
  return job;
}

nlohmann::json to_json(const AttemptRecord& r) {
  nlohmann::json j = {{"slurm_id", r.slurm_id}, {"name", r.name},     {"attempt", r.attempt},
                      {"retry_of", r.retry_of}, {"command", r.command}, {"workdir", r.workdir},
                      {"gres", r.gres},         {"node", r.node},     {"gpus", r.gpus},
                      {"mps", r.mps},           {"state", r.state},   {"retried_as", r.retried_as},
                      {"reason", r.reason},     {"start_unix", r.start_unix}, {"end_unix", r.end_unix}};
  auto put = [&j](const char* key, const auto& value) { j[key] = value ? nlohmann::json(*value) : nlohmann::json(); };
  put("mem_bytes", r.mem_bytes);
  put("exit_code", r.exit_code);
  put("peak_bytes", r.peak_bytes);
  put("energy_j", r.energy_j);
  return j;
}

AttemptRecord attempt_from_json(const nlohmann::json& j) {
  AttemptRecord r;
  r.slurm_id = j.at("slurm_id").get<std::string>();
  r.name = j.value("name", "");
  r.attempt = j.value("attempt", 1);
  r.retry_of = j.value("retry_of", "");
  r.command = j.value("command", std::vector<std::string>{});
  r.workdir = j.value("workdir", "");
  r.gres = j.value("gres", "");
  r.node = j.value("node", "");
  r.gpus = j.value("gpus", "");
  r.mps = j.value("mps", false);
  r.state = j.value("state", "RUNNING");
  r.retried_as = j.value("retried_as", "");
  r.reason = j.value("reason", "");
  r.start_unix = j.value("start_unix", 0.0);
  r.end_unix = j.value("end_unix", 0.0);
  r.mem_bytes = optional_field<int64_t>(j, "mem_bytes");
  r.exit_code = optional_field<int>(j, "exit_code");
  r.peak_bytes = optional_field<int64_t>(j, "peak_bytes");
  r.energy_j = optional_field<double>(j, "energy_j");
  return r;
}

StateDir::StateDir(std::string path) : path_(std::move(path)) {
  for (const char* part : {"", "/attempts", "/scripts", "/logs"}) {
    ensure_writable_dir(path_ + part, "--state", path_ + part);
  }
}

std::string StateDir::script_path(const std::string& name) const {
  return path_ + "/scripts/" + safe_file_name(name) + ".sh";
}

void StateDir::append_submitted(const SubmittedJob& job) const {
  // One write(2) of one line with O_APPEND: submitters on several hosts of a
  // shared file system never interleave half lines.
  std::string line = to_json(job).dump() + "\n";
  int fd = ::open((path_ + "/submitted.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw InputError(path_ + "/submitted.jsonl", "", "a writable file");
  ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size())) throw InputError(path_ + "/submitted.jsonl", "", "room to write");
}

std::vector<SubmittedJob> StateDir::submitted() const {
  std::vector<SubmittedJob> out;
  std::ifstream in(path_ + "/submitted.jsonl");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    try {
      out.push_back(submitted_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception& e) {
      spdlog::warn("{}/submitted.jsonl:{}: skipped ({})", path_, number, e.what());
    }
  }
  return out;
}

void StateDir::write_attempt(const AttemptRecord& record) const {
  write_file_atomically(path_ + "/attempts/" + safe_file_name(record.slurm_id) + ".json", to_json(record).dump(1));
}

std::vector<AttemptRecord> StateDir::attempts() const {
  std::vector<AttemptRecord> out;
  for (const auto& file : list_directory(path_ + "/attempts")) {
    if (file.size() < 5 || file.substr(file.size() - 5) != ".json") continue;
    std::string path = path_ + "/attempts/" + file;
    try {
      out.push_back(attempt_from_json(nlohmann::json::parse(read_file(path))));
    } catch (const std::exception& e) {
      spdlog::warn("{}: skipped ({})", path, e.what());
    }
  }
  return out;
}

}  // namespace colo::slurm
