#include "colo/server/http_api.h"
#include "colo/server/dashboard_data.h"
#include "colo/sched/admission.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "colo/core/files.h"
#include "colo/core/shell_words.h"
#include "colo/core/stopwatch.h"
#include "colo/sched/job.h"
#include "colo/sched/job_spec.h"

namespace colo::server {
namespace {

const char* kJson = "application/json";

// Rows of the dashboard's Gantt chart: more would be too thin to read.
constexpr size_t kGanttRows = 40;

// The largest request body colod reads (16 MiB: tens of thousands of jobs).
constexpr size_t kMostBodyBytes = size_t{16} << 20;

void reply_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", message}}.dump() + "\n", kJson);
}

// A whole number written in decimal digits that fits int64; nullopt else.
std::optional<int64_t> whole_number(const std::string& text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// `value` as the Prometheus text format spells it: NaN, +Inf, -Inf, else
// the shortest decimal that reads back as the same double (an ostream's
// default 6 digits would write 1234567.5 J as 1.23457e+06).
std::string prometheus_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return std::string(text, end);
}

// The fields a job's JSON may have (sched::to_json's), each checked in
// job_from before it is read.
const std::set<std::string> kJobFields = {"name", "command", "workdir", "env", "gpus", "priority", "array_index",
                                          "mem_bytes", "sm_share", "samples", "model", "workload", "loader"};

bool whole_in(const nlohmann::json& v, int64_t low, int64_t high) {
  return v.is_number_integer() && v.get<int64_t>() >= low && v.get<int64_t>() <= high;
}

// A job from a request body, validated field by field; throws
// std::invalid_argument naming the job and the field.
sched::JobSpec job_from(const nlohmann::json& given, size_t index) {
  std::string where = "job " + std::to_string(index) + ": ";
  if (!given.is_object()) throw std::invalid_argument(where + "expected a JSON object");
  nlohmann::json j;  // a field given as null is one not given
  for (const auto& [key, value] : given.items()) {
    if (!value.is_null()) j[key] = value;
  }
  auto fail = [&](const std::string& field, const std::string& what) {
    throw std::invalid_argument(where + "\"" + field + "\" " + what);
  };
  for (const auto& [key, value] : j.items()) {
    if (kJobFields.count(key) == 0) fail(key, "is not a job field (fields: name, command, workdir, env, gpus, "
                                              "priority, mem_bytes, sm_share, samples, array_index, model, loader)");
  }
  for (const char* required : {"name", "command"}) {
    if (!j.contains(required)) throw std::invalid_argument(where + "missing field \"" + required + "\"");
  }
  if (!j["name"].is_string() || j["name"].get<std::string>().empty()) fail("name", "must be a non-empty string");
  const nlohmann::json& command = j["command"];
  if (!command.is_array() || command.empty() ||
      !std::all_of(command.begin(), command.end(), [](const auto& a) { return a.is_string(); }) ||
      command.front().get<std::string>().empty()) {
    fail("command", "must be a non-empty array of strings (argv)");
  }
  if (j.contains("workdir")) {
    if (!j["workdir"].is_string() || j["workdir"].get<std::string>().empty() || j["workdir"].get<std::string>()[0] != '/') {
      fail("workdir", "must be an absolute path (jobs run on the daemon's host)");
    }
    if (!is_directory(j["workdir"].get<std::string>())) fail("workdir", "is not a directory on the daemon's host");
  }
  if (j.contains("env") && (!j["env"].is_object() || !std::all_of(j["env"].begin(), j["env"].end(),
                                                                  [](const auto& v) { return v.is_string(); }))) {
    fail("env", "must be an object of strings");
  }
  if (j.contains("gpus") && !whole_in(j["gpus"], 1, sched::kMostGpusPerJob)) {
    fail("gpus", "must be a whole number in [1, " + std::to_string(sched::kMostGpusPerJob) + "]");
  }
  if (j.contains("priority") && !whole_in(j["priority"], -sched::kMostPriority, sched::kMostPriority)) {
    fail("priority", "must be a whole number in [-" + std::to_string(sched::kMostPriority) + ", " +
                         std::to_string(sched::kMostPriority) + "]");
  }
  if (j.contains("array_index") && !whole_in(j["array_index"], -1, int64_t{1} << 30)) {
    fail("array_index", "must be a whole number >= -1");
  }
  if (j.contains("mem_bytes") && !whole_in(j["mem_bytes"], 1, int64_t{1} << 60)) {
    fail("mem_bytes", "must be a whole number of bytes in [1, 2^60]");
  }
  if (j.contains("sm_share") && !(j["sm_share"].is_number() && j["sm_share"].get<double>() >= 0 &&
                                  j["sm_share"].get<double>() <= 1)) {
    fail("sm_share", "must be a number in [0, 1]");
  }
  if (j.contains("samples") && !whole_in(j["samples"], 1, sched::kMostSamples)) fail("samples", "must be a whole number >= 1");
  if (j.contains("workload") && !j["workload"].is_string()) fail("workload", "must be a string");
  if (j.contains("loader") && (!j["loader"].is_string() || !path_exists(j["loader"].get<std::string>()))) {
    fail("loader", "must be the path of a shared loader's data file on the daemon's host");
  }
  try {
    return sched::job_spec_from_json(j);
  } catch (const nlohmann::json::exception& e) {  // inside `model`, the one field not checked above
    throw std::invalid_argument(where + "\"model\" must be {builder, input, ...} as colo show prints it (" +
                                e.what() + ")");
  }
}

// The methods each route takes (HEAD goes with GET), for the 405 of a
// route asked with another; keep in step with mount().
const std::vector<std::pair<std::regex, std::string>>& route_methods() {
  static const std::vector<std::pair<std::regex, std::string>> routes = {
      {std::regex("/healthz|/metrics|/api/gpus|/api/gantt|/|/static/chart\\.min\\.js"), "GET, HEAD"},
      {std::regex("/jobs"), "GET, HEAD, POST"},
      {std::regex("/jobs/[^/]+(/log|/metrics|/sweep)?"), "GET, HEAD"},
      {std::regex("/jobs/[^/]+/cancel"), "POST"},
  };
  return routes;
}

// The Allow header's value when `path` is a route that does not take
// `method`; "" when it does or when no route has that path.
std::string methods_not_including(const std::string& method, const std::string& path) {
  for (const auto& [pattern, methods] : route_methods()) {
    if (!std::regex_match(path, pattern)) continue;
    std::stringstream list(methods);
    for (std::string m; std::getline(list >> std::ws, m, ',');) {
      if (m == method) return "";
    }
    return methods;
  }
  return "";
}

// The value of cookie `name` in a Cookie header; "" when absent.
std::string cookie_value(const std::string& header, const std::string& name) {
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(at, end - at);
    size_t start = pair.find_first_not_of(' ');
    if (start != std::string::npos && pair.compare(start, name.size() + 1, name + "=") == 0) {
      return pair.substr(start + name.size() + 1);
    }
    at = end + 1;
  }
  return "";
}

const char* kDashboardHtml =
#include "dashboard_html.inc"
    ;

// Chart.js as Debian installs it (libjs-chart.js); $COLO_CHARTJS overrides.
std::string chartjs_path() {
  const char* given = std::getenv("COLO_CHARTJS");
  return given && *given ? given : "/usr/share/javascript/chart.js/chart.min.js";
}

}  // namespace

HttpApi::HttpApi(const std::string& store_path, std::string token, std::vector<gpu::DevicePtr> devices)
    : store_(store_path), token_(std::move(token)), devices_(std::move(devices)) {
  if (!devices_.empty()) {
    sampler_ = std::make_unique<gpu::Sampler>(devices_, gpu::SamplerOptions{1.0, 900, ""});
    sampler_->start();
  }
}

HttpApi::~HttpApi() = default;

std::string HttpApi::metrics() {
  std::vector<sched::JobRecord> jobs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs = store_.list();
  }
  std::map<std::string, int> by_state;
  for (auto state : {sched::JobState::kPending, sched::JobState::kRunning, sched::JobState::kCompleted,
                     sched::JobState::kFailed, sched::JobState::kOutOfMemory, sched::JobState::kRequeued,
                     sched::JobState::kCancelled}) {
    by_state[sched::to_string(state)] = 0;
  }
  int64_t oom = 0;
  double energy = 0;
  for (const auto& j : jobs) {
    ++by_state[sched::to_string(j.state)];
    oom += j.oom_deaths;
    energy += j.energy_j;
  }
  std::ostringstream out;
  out << "# HELP colo_jobs Jobs in the store by state.\n# TYPE colo_jobs gauge\n";
  for (const auto& [state, count] : by_state) out << "colo_jobs{state=\"" << state << "\"} " << count << "\n";
  out << "# HELP colo_oom_deaths_total Job attempts that died of GPU out-of-memory.\n"
         "# TYPE colo_oom_deaths_total counter\ncolo_oom_deaths_total " << oom << "\n";
  out << "# HELP colo_job_energy_joules_total Energy attributed to jobs.\n"
         "# TYPE colo_job_energy_joules_total counter\ncolo_job_energy_joules_total " << prometheus_value(energy) << "\n";
  if (!devices_.empty()) {
    out << "# HELP colo_gpu_memory_used_bytes Device memory in use.\n# TYPE colo_gpu_memory_used_bytes gauge\n";
    std::ostringstream sm, power;
    for (auto& device : devices_) {
      gpu::DeviceSample s = device->sample();
      std::string label = "{gpu=\"" + std::to_string(s.index) + "\"}";
      out << "colo_gpu_memory_used_bytes" << label << " " << s.mem_used_bytes << "\n";
      if (s.sm_active || s.gpu_util) {
        sm << "colo_gpu_sm_activity_ratio" << label << " " << prometheus_value(s.sm_active.value_or(*s.gpu_util)) << "\n";
      }
      if (s.power_w) power << "colo_gpu_power_watts" << label << " " << prometheus_value(*s.power_w) << "\n";
    }
    if (!sm.str().empty()) {
      out << "# HELP colo_gpu_sm_activity_ratio Fraction of time the device's SMs were busy (0-1).\n"
             "# TYPE colo_gpu_sm_activity_ratio gauge\n" << sm.str();
    }
    if (!power.str().empty()) {
      out << "# HELP colo_gpu_power_watts Device power draw.\n# TYPE colo_gpu_power_watts gauge\n" << power.str();
    }
  }
  return out.str();
}

nlohmann::json HttpApi::gpu_history() {
  std::vector<sched::JobRecord> jobs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs = store_.list();
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t g = 0; g < devices_.size(); ++g) {
    std::vector<gpu::DeviceSample> samples = sampler_->samples(g);
    double now = samples.empty() ? 0 : samples.back().time_s;
    gpus.push_back(gpu_history_json(devices_[g]->info(), static_cast<int>(g), samples, now, jobs));
  }
  return gpus;
}

nlohmann::json HttpApi::gantt() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<sched::JobRecord> all = store_.list();
  std::vector<sched::JobRecord> shown = gantt_jobs(all, kGanttRows);
  std::map<int64_t, std::vector<sched::JobRun>> runs;
  for (const auto& j : shown) runs[j.id] = store_.runs(j.id);
  nlohmann::json chart = gantt_json(shown, runs, unix_time_s());
  chart["left_out"] = all.size() - shown.size();
  return chart;
}

void HttpApi::mount(httplib::Server& server) {
  // An address no route takes (/jobs/abc) gets a body saying so, as every error does.
  // httplib's own errors (a body too large, a request it could not read) say what they are.
  server.set_payload_max_length(kMostBodyBytes);
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413) {
      reply_error(res, 413, "the body is too large: at most " + std::to_string(kMostBodyBytes) +
                                " bytes, and 8192 when sent as application/x-www-form-urlencoded (curl -d's default): "
                                "send Content-Type: application/json");
    } else if (res.status == 404) {
      reply_error(res, 404, "no such route: " + req.method + " " + req.path);
    } else {
      reply_error(res, res.status, "cannot serve " + req.method + " " + req.path + " (HTTP status " +
                                       std::to_string(res.status) + ")");
    }
  });
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (std::string allow = methods_not_including(req.method, req.path); !allow.empty()) {
      res.set_header("Allow", allow);
      reply_error(res, 405, req.method + " " + req.path + " is not allowed; it takes " + allow);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.path == "/healthz" || req.path == "/static/chart.min.js") return httplib::Server::HandlerResponse::Unhandled;
    std::string given = cookie_value(req.get_header_value("Cookie"), "colo_token");
    if (req.has_param("token")) given = req.get_param_value("token");
    std::string header = req.get_header_value("Authorization");
    if (header.rfind("Bearer ", 0) == 0) given = header.substr(7);
    if (given != token_) {
      reply_error(res, 401, "missing or wrong token (Authorization: Bearer <the token file's contents>)");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server.Post("/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    nlohmann::json body;
    try {
      body = nlohmann::json::parse(req.body);
    } catch (const nlohmann::json::parse_error& e) {  // its what() names the line, column and what was expected
      return reply_error(res, 400, std::string("the body is not JSON: ") + e.what());
    }
    std::vector<sched::JobSpec> specs;
    try {
      if (body.is_array()) {
        for (size_t i = 0; i < body.size(); ++i) specs.push_back(job_from(body[i], i));
      } else {
        specs.push_back(job_from(body, 0));
      }
    } catch (const std::invalid_argument& e) {
      return reply_error(res, 400, e.what());
    }
    if (specs.empty()) return reply_error(res, 400, "no jobs in the body");
    try {
      sched::check_gpus_fit(specs, devices_.size());
    } catch (const std::invalid_argument& e) {
      return reply_error(res, 400, e.what());
    }
    // Jobs without `mem` get the past runs' peak here; a model table's or a
    // spec's estimate the scheduler makes once they are queued.
    std::vector<estimate::PastRun> history;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      history = sched::past_runs(store_);
    }
    sched::fill_memory_estimates(specs, std::move(history), sched::ByScheduler::kModelsAndSpecs);
    std::vector<int64_t> ids;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ids = store_.submit(specs);
    }
    res.status = 201;
    res.set_content(nlohmann::json{{"ids", ids}}.dump() + "\n", kJson);
  });
  server.Get("/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    std::vector<sched::JobState> states;
    std::string wanted = req.get_param_value("state");
    std::stringstream list(wanted);
    for (std::string name; std::getline(list, name, ',');) {
      if (name.empty()) continue;
      std::string upper = name;
      std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
      auto state = sched::job_state_from_string(upper);
      if (!state) {
        return reply_error(res, 400,
                           "unknown state \"" + name + "\"; the states are " + sched::job_state_names() + " (any case)");
      }
      states.push_back(*state);
    }
    nlohmann::json out = nlohmann::json::array();
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& j : store_.list(states)) out.push_back(sched::to_json(j));
    res.set_content(out.dump() + "\n", kJson);
  });
  server.Get(R"(/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    auto id = whole_number(req.matches[1]);
    if (!id) return reply_error(res, 404, "no job " + std::string(req.matches[1]));
    std::lock_guard<std::mutex> lock(mutex_);
    auto job = store_.get(*id);
    if (!job) return reply_error(res, 404, "no job " + std::to_string(*id));
    nlohmann::json record = sched::to_json(*job);
    record["command_line"] = shell_command_line(job->spec.command);
    res.set_content(record.dump() + "\n", kJson);
  });
  // Cancelling needs no body, and `curl -X POST` sends none, nor a Content-Length. Such a
  // request's body is empty (RFC 9112 6.3), but httplib 0.11 waits for one until its read
  // times out (a 400, nothing cancelled); so this route reads a body only when one is announced,
  // and sets it aside.
  server.Post(R"(/jobs/(\d+)/cancel)", [this](const httplib::Request& req, httplib::Response& res,
                                              const httplib::ContentReader& read_body) {
    if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
      if (!read_body([](const char*, size_t) { return true; })) return;  // httplib set the status (400, 413)
    }
    auto number = whole_number(req.matches[1]);
    if (!number) return reply_error(res, 404, "no job " + std::string(req.matches[1]));
    const int64_t id = *number;
    std::lock_guard<std::mutex> lock(mutex_);
    auto before = store_.cancel(id);
    if (!before) return reply_error(res, 404, "no job " + std::to_string(id));
    std::string after = sched::is_final(*before) ? sched::to_string(*before) : "CANCELLED";
    res.set_content(nlohmann::json{{"id", id}, {"before", sched::to_string(*before)}, {"after", after}}.dump() + "\n", kJson);
  });
  server.Get(R"(/jobs/(\d+)/log)", [this](const httplib::Request& req, httplib::Response& res) {
    auto id = whole_number(req.matches[1]);
    std::optional<sched::JobRecord> job;
    if (id) {
      std::lock_guard<std::mutex> lock(mutex_);
      job = store_.get(*id);
    }
    if (!job) return reply_error(res, 404, "no job " + std::string(req.matches[1]));
    auto offset = req.has_param("offset") ? whole_number(req.get_param_value("offset")) : std::optional<int64_t>(0);
    if (!offset || *offset < 0) {
      return reply_error(res, 400, "offset: expected a whole number of bytes >= 0, got \"" +
                                       req.get_param_value("offset") + "\"");
    }
    std::string chunk;
    if (!job->log_path.empty()) {
      std::ifstream in(job->log_path, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(*offset));
      chunk.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    res.set_header("X-Colo-Final", sched::is_final(job->state) ? "1" : "0");
    res.set_content(chunk, "text/plain");
  });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics(), "text/plain; version=0.0.4; charset=utf-8");  // the text format's own type
  });
  server.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
    // The page drops ?token= from the address bar; the cookie carries it from then on.
    if (req.has_param("token")) {
      res.set_header("Set-Cookie", "colo_token=" + token_ + "; HttpOnly; SameSite=Strict; Path=/");
    }
    res.set_header("Cache-Control", "no-store");
    res.set_content(kDashboardHtml, "text/html; charset=utf-8");
  });
  server.Get("/static/chart.min.js", [](const httplib::Request&, httplib::Response& res) {
    std::ifstream in(chartjs_path(), std::ios::binary);
    if (!in) {
      reply_error(res, 404, "Chart.js not found at " + chartjs_path() + " (install Debian's libjs-chart.js)");
      return;
    }
    std::ostringstream body;
    body << in.rdbuf();
    res.set_content(body.str(), "application/javascript");
  });
  server.Get("/api/gpus", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(gpu_history().dump(), kJson);
  });
  server.Get("/api/gantt", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(gantt().dump(), kJson);
  });
  server.Get(R"(/jobs/(\d+)/metrics)", [this](const httplib::Request& req, httplib::Response& res) {
    std::optional<sched::JobRecord> job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto id = whole_number(req.matches[1])) job = store_.get(*id);
    }
    if (!job) return reply_error(res, 404, "no job " + std::string(req.matches[1]));
    res.set_content(read_metrics(train_metrics_path(*job)).dump(), kJson);
  });
  server.Get(R"(/jobs/(\d+)/sweep)", [this](const httplib::Request& req, httplib::Response& res) {
    std::optional<sched::JobRecord> job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto id = whole_number(req.matches[1])) job = store_.get(*id);
    }
    if (!job) return reply_error(res, 404, "no job " + std::string(req.matches[1]));
    res.set_content(sweep_ranking(read_metrics(sweep_log_path(*job))).dump(), kJson);
  });
}

HttpServer::HttpServer(HttpApi& api, const std::string& host, int port)
    : server_(std::make_unique<httplib::Server>()) {
  api.mount(*server_);
  port_ = port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (port_ <= 0) throw std::runtime_error("colod cannot listen on " + host + ":" + std::to_string(port));
  thread_ = std::make_unique<std::thread>([this] { server_->listen_after_bind(); });
}

HttpServer::~HttpServer() {
  server_->stop();
  if (thread_ && thread_->joinable()) thread_->join();
}

}  // namespace colo::server
