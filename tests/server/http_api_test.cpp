#include "colo/server/http_api.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "colo/core/files.h"
#include "colo/gpu/simulated_device.h"
#include "colo/server/dashboard_data.h"
#include "support/temp_dir.h"

namespace colo::server {
namespace {

class HttpApiTest : public ::testing::Test {
 protected:
  HttpApiTest()
      : api_(dir_.file("jobs.db"), "secret", {}), server_(api_, "127.0.0.1", 0), client_("127.0.0.1", server_.port()) {
    client_.set_bearer_token_auth("secret");
  }
  testing::TempDir dir_;
  HttpApi api_;
  HttpServer server_;
  httplib::Client client_;
};

// colod's whole answer to `request`, sent byte for byte as written; "" when
// it cannot connect. For requests httplib's client never sends, such as
// curl -X POST's: no body and no Content-Length. Gives up after 30 s.
std::string raw_exchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  std::string reply;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
    timeval timeout{30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    // The socket stays open for writing, as curl's does: colod must not wait for a body.
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      char chunk[4096];
      for (ssize_t n; (n = recv(fd, chunk, sizeof chunk, 0)) > 0;) reply.append(chunk, static_cast<size_t>(n));
    }
  }
  close(fd);
  return reply;
}

TEST_F(HttpApiTest, EveryRouteButHealthNeedsTheToken) {
  httplib::Client anonymous("127.0.0.1", server_.port());
  EXPECT_EQ(anonymous.Get("/healthz")->status, 200);
  EXPECT_EQ(anonymous.Get("/jobs")->status, 401);
  EXPECT_EQ(anonymous.Get("/metrics")->status, 401);
  EXPECT_EQ(anonymous.Get("/?token=secret")->status, 200);
  anonymous.set_bearer_token_auth("wrong");
  EXPECT_EQ(anonymous.Post("/jobs", "{}", "application/json")->status, 401);
}

TEST_F(HttpApiTest, SubmitsListsShowsAndCancels) {
  auto created = client_.Post("/jobs", R"([{"name": "a", "command": ["true"]},
                                          {"name": "b", "command": ["sleep", "1"], "mem_bytes": 1024}])",
                              "application/json");
  ASSERT_EQ(created->status, 201) << created->body;
  auto ids = nlohmann::json::parse(created->body)["ids"];
  ASSERT_EQ(ids.size(), 2u);
  auto job = nlohmann::json::parse(client_.Get("/jobs/" + ids[1].dump())->body);
  EXPECT_EQ(job["state"], "PENDING");
  EXPECT_EQ(job["spec"]["mem_bytes"], 1024);
  auto cancelled = nlohmann::json::parse(client_.Post("/jobs/" + ids[0].dump() + "/cancel", "", "application/json")->body);
  EXPECT_EQ(cancelled["before"], "PENDING");
  EXPECT_EQ(cancelled["after"], "CANCELLED");
  auto pending = nlohmann::json::parse(client_.Get("/jobs?state=PENDING")->body);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0]["spec"]["name"], "b");
  EXPECT_EQ(client_.Get("/jobs/99")->status, 404);
  auto unknown = client_.Get("/jobs?state=SLEEPING");
  EXPECT_EQ(unknown->status, 400);
  EXPECT_NE(unknown->body.find("the states are PENDING, RUNNING, COMPLETED"), std::string::npos) << unknown->body;
  EXPECT_EQ(nlohmann::json::parse(client_.Get("/jobs?state=pending")->body), pending) << "any case";
  std::string metrics = client_.Get("/metrics")->body;
  EXPECT_NE(metrics.find("colo_jobs{state=\"CANCELLED\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("colo_jobs{state=\"PENDING\"} 1"), std::string::npos) << metrics;
}

TEST_F(HttpApiTest, RejectsBadJobsNamingTheFieldAndStoresNothing) {
  auto not_json = client_.Post("/jobs", "{name", "application/json");
  EXPECT_EQ(not_json->status, 400);
  EXPECT_NE(not_json->body.find("not JSON"), std::string::npos);
  auto missing = client_.Post("/jobs", R"({"name": "x"})", "application/json");
  EXPECT_EQ(missing->status, 400);
  EXPECT_NE(missing->body.find("command"), std::string::npos);
  auto wrong_type = client_.Post("/jobs", R"([{"name": "ok", "command": ["true"]}, {"name": "y", "command": "true", "gpus": "two"}])",
                                 "application/json");
  EXPECT_EQ(wrong_type->status, 400);
  EXPECT_NE(wrong_type->body.find("job 1"), std::string::npos) << wrong_type->body;
  auto share = client_.Post("/jobs", R"({"name": "z", "command": ["true"], "sm_share": 2})", "application/json");
  EXPECT_NE(share->body.find("sm_share"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(client_.Get("/jobs")->body).size(), 0u);
}

TEST_F(HttpApiTest, EachFieldIsCheckedBeforeItIsStoredNothingWrapsOrIsIgnored) {
  const std::string dir = "\"workdir\": \"" + dir_.path() + "\"";
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"name": "p", "command": ["true"], "priority": 1e20})", "\"priority\""},  // was stored as INT_MIN
           {R"({"name": "p", "command": ["true"], "priority": -99999999999})", "\"priority\""},
           {R"({"name": "g", "command": ["true"], "gpus": 1.5})", "\"gpus\""},
           {R"({"name": "m", "command": ["true"], "mem_bytes": 1.5})", "\"mem_bytes\""},
           {R"({"name": "m", "command": ["true"], "mem_bytes": 0})", "\"mem_bytes\" must be a whole number of bytes in [1,"},
           {R"({"name": "m", "command": ["true"], "mem_bytes": -1})", "\"mem_bytes\""},
           {R"({"name": "m", "command": ["true"], "mem": "6GiB"})", "\"mem\" is not a job field"},
           {R"({"name": "s", "command": ["true"], "samples": -3})", "\"samples\""},
           {R"({"name": "", "command": ["true"]})", "\"name\""},
           {R"({"name": "w", "command": ["true"], "workdir": "sub"})", "\"workdir\" must be an absolute path"},
           {R"({"name": "w", "command": ["true"], "workdir": "/no/such/dir"})", "\"workdir\" is not a directory"},
           {R"({"name": "t", "command": ["true"], "gpus": "1"})", "\"gpus\""}}) {
    auto reply = client_.Post("/jobs", body, "application/json");
    EXPECT_EQ(reply->status, 400) << body;
    EXPECT_NE(nlohmann::json::parse(reply->body)["error"].get<std::string>().find(field), std::string::npos)
        << body << " -> " << reply->body;
  }
  EXPECT_EQ(client_.Post("/jobs", "{\"name\": \"ok\", \"command\": [\"true\"], " + dir + "}", "application/json")->status,
            201);
  EXPECT_EQ(nlohmann::json::parse(client_.Get("/jobs")->body).size(), 1u);
}

TEST_F(HttpApiTest, CancelTakesNoBodyAsCurlSendsItOrAJsonBody) {
  auto created = client_.Post("/jobs", R"([{"name": "a", "command": ["true"]}, {"name": "b", "command": ["true"]}])",
                              "application/json");
  ASSERT_EQ(created->status, 201) << created->body;
  // curl -X POST .../cancel: no body, no Content-Length (once a 400 "cannot serve" after 5 s, nothing cancelled).
  const std::string reply = raw_exchange(server_.port(),
                                         "POST /jobs/1/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "Authorization: Bearer secret\r\nAccept: */*\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_NE(reply.find(R"("after":"CANCELLED")"), std::string::npos) << reply;
  EXPECT_EQ(nlohmann::json::parse(client_.Get("/jobs/1")->body)["state"], "CANCELLED");
  // A JSON body, as accepted before, still cancels; it is read and set aside.
  auto with_body = client_.Post("/jobs/2/cancel", R"({"why": "done"})", "application/json");
  ASSERT_EQ(with_body->status, 200) << with_body->body;
  EXPECT_EQ(nlohmann::json::parse(with_body->body)["after"], "CANCELLED");
  EXPECT_EQ(client_.Get("/jobs")->status, 200) << "the connection still serves the next request";
}

TEST_F(HttpApiTest, BadNumbersInTheAddressAre404Or400WithABodyNot500) {
  for (const char* path : {"/jobs/99999999999999999999", "/jobs/abc", "/jobs/-1", "/jobs/99999999999999999999/log"}) {
    auto reply = client_.Get(path);
    EXPECT_EQ(reply->status, 404) << path;
    EXPECT_NE(reply->body.find("\"error\""), std::string::npos) << path << " -> '" << reply->body << "'";
  }
  EXPECT_EQ(client_.Post("/jobs/99999999999999999999/cancel", "", "application/json")->status, 404);
  ASSERT_EQ(client_.Post("/jobs", R"({"name": "a", "command": ["true"]})", "application/json")->status, 201);
  for (const char* offset : {"abc", "-5", "1e3", "99999999999999999999999"}) {
    auto reply = client_.Get(std::string("/jobs/1/log?offset=") + offset);
    EXPECT_EQ(reply->status, 400) << offset;
    EXPECT_NE(reply->body.find("offset"), std::string::npos) << offset << " -> " << reply->body;
  }
  EXPECT_EQ(client_.Get("/jobs/1/log?offset=0")->status, 200);
}

TEST_F(HttpApiTest, AMethodARouteDoesNotTakeIs405WithAllow) {
  ASSERT_EQ(client_.Post("/jobs", R"({"name": "a", "command": ["true"]})", "application/json")->status, 201);
  struct Case {
    std::string method, path, allow;
  };
  for (const Case& c : std::vector<Case>{{"DELETE", "/jobs/1", "GET, HEAD"},
                                         {"PUT", "/jobs/1", "GET, HEAD"},
                                         {"PATCH", "/jobs", "GET, HEAD, POST"},
                                         {"GET", "/jobs/1/cancel", "POST"},
                                         {"POST", "/metrics", "GET, HEAD"},
                                         {"DELETE", "/healthz", "GET, HEAD"}}) {
    httplib::Request req;
    req.method = c.method;
    req.path = c.path;
    req.headers = {{"Authorization", "Bearer secret"}};
    if (c.method != "GET" && c.method != "DELETE") req.body = "{}";
    auto reply = client_.send(req);
    ASSERT_TRUE(reply) << c.method << " " << c.path;
    EXPECT_EQ(reply->status, 405) << c.method << " " << c.path << " -> " << reply->body;
    EXPECT_EQ(reply->get_header_value("Allow"), c.allow) << c.method << " " << c.path;
    EXPECT_NE(reply->body.find("not allowed"), std::string::npos) << reply->body;
  }
  EXPECT_EQ(client_.Get("/jobs/1")->status, 200) << "the methods a route takes still work";
  EXPECT_EQ(client_.Post("/jobs/1/cancel", "", "application/json")->status, 200);
  EXPECT_EQ(client_.Get("/nowhere")->status, 404) << "an unknown address stays 404";
}

TEST_F(HttpApiTest, ABodyTooLargeOrNotJsonGetsAnErrorSayingSo) {
  std::string job = R"({"name": ")" + std::string(10000, 'x') + R"(", "command": ["true"]})";
  auto form = client_.Post("/jobs", job, "application/x-www-form-urlencoded");  // curl -d's default
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 413);
  EXPECT_NE(form->body.find("Content-Type: application/json"), std::string::npos) << form->body;
  EXPECT_EQ(form->body.find("no such route"), std::string::npos) << form->body;
  EXPECT_EQ(client_.Post("/jobs", job, "application/json")->status, 201) << "the same job as JSON is fine";

  std::string huge = R"({"name": ")" + std::string(size_t{17} << 20, 'x') + R"(", "command": ["true"]})";
  auto large = client_.Post("/jobs", huge, "application/json");
  ASSERT_TRUE(large) << "colod answers instead of dropping the connection";
  EXPECT_EQ(large->status, 413);
  EXPECT_NE(large->body.find("too large"), std::string::npos) << large->body;
  EXPECT_EQ(nlohmann::json::parse(client_.Get("/jobs")->body).size(), 1u) << "nothing stored";

  auto broken = client_.Post("/jobs", R"({"name": "a", "command": ["true"],})", "application/json");
  EXPECT_EQ(broken->status, 400);
  EXPECT_NE(broken->body.find("not JSON"), std::string::npos) << broken->body;
  EXPECT_NE(broken->body.find("column 35"), std::string::npos) << "says where: " << broken->body;
}

TEST(HttpApi, RejectsAJobAskingForMoreGpusThanTheHostHas) {
  testing::TempDir dir;
  HttpApi api(dir.file("jobs.db"), "secret", {std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})});
  HttpServer server(api, "127.0.0.1", 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_bearer_token_auth("secret");
  auto two = client.Post("/jobs", R"({"name": "ddp", "command": ["true"], "gpus": 2})", "application/json");
  EXPECT_EQ(two->status, 400);
  EXPECT_NE(two->body.find("'ddp' asks for 2 GPUs; this host has 1"), std::string::npos) << two->body;
  EXPECT_EQ(client.Post("/jobs", R"({"name": "one", "command": ["true"]})", "application/json")->status, 201);
}

TEST_F(HttpApiTest, TheDashboardPageHoldsNoDataAndTheTokenMovesToACookie) {
  client_.Post("/jobs", R"({"name": "secret-job-name", "command": ["true"]})", "application/json");
  httplib::Client browser("127.0.0.1", server_.port());
  auto page = browser.Get("/?token=secret");
  ASSERT_EQ(page->status, 200);
  EXPECT_EQ(page->body.find("secret-job-name"), std::string::npos) << "data comes only through the API";
  EXPECT_NE(page->body.find("history.replaceState"), std::string::npos) << "the page drops ?token= from the URL";
  std::string cookie = page->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("colo_token=secret"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  auto with_cookie = browser.Get("/jobs", {{"Cookie", "other=1; colo_token=secret"}});
  ASSERT_EQ(with_cookie->status, 200);
  EXPECT_NE(with_cookie->body.find("secret-job-name"), std::string::npos);
  EXPECT_EQ(browser.Get("/jobs", {{"Cookie", "colo_token=wrong"}})->status, 401);
  auto wrong = browser.Get("/?token=wrong");
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(wrong->get_header_value("Set-Cookie"), "");
}

// Checks `text` against the Prometheus text format's rules; returns what breaks them.
std::vector<std::string> exposition_faults(const std::string& text) {
  std::vector<std::string> faults;
  const std::regex name("[a-zA-Z_:][a-zA-Z0-9_:]*");
  const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+))");
  std::set<std::string> helped, typed, series, families_seen;
  std::string current;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      std::string family = line.substr(7, line.find(' ', 7) - 7);
      auto& seen = line[2] == 'H' ? helped : typed;
      if (!seen.insert(family).second) faults.push_back("twice: " + line);
      if (!std::regex_match(family, name)) faults.push_back("bad name: " + line);
      if (line[2] == 'T' && line.find(" counter") != std::string::npos && family.size() > 6 &&
          family.compare(family.size() - 6, 6, "_total") != 0) {
        faults.push_back("counter without _total: " + line);
      }
      if (family != current && families_seen.count(family)) faults.push_back("family split: " + line);
      current = family;
      families_seen.insert(family);
    } else if (std::regex_match(line, m, sample)) {
      std::string family = m[1];
      if (!helped.count(family)) faults.push_back("no # HELP before: " + line);
      if (!typed.count(family)) faults.push_back("no # TYPE before: " + line);
      if (family != current) faults.push_back("sample away from its family: " + line);
      if (!series.insert(m[1].str() + m[2].str()).second) faults.push_back("duplicate series: " + line);
      std::string value = m[3];
      static const std::set<std::string> special = {"NaN", "+Inf", "-Inf"};
      char* end = nullptr;
      std::strtod(value.c_str(), &end);
      bool numeric = value.find_first_not_of("0123456789.eE+-") == std::string::npos && *end == '\0';
      if (!special.count(value) && !numeric) faults.push_back("bad value: " + line);
    } else if (!line.empty()) {
      faults.push_back("not a sample: " + line);
    }
  }
  return faults;
}

TEST(HttpApiMetrics, EveryFamilyHasHelpAndTypeAndValuesArePrometheusFloats) {
  testing::TempDir dir;
  {
    sched::JobStore store(dir.file("jobs.db"));
    sched::JobSpec spec;
    spec.name = "a\"b\\c\nd <é>";
    spec.command = {"true"};
    int64_t id = store.submit({spec})[0];
    ASSERT_TRUE(store.mark_running(id, {0}, 1, ""));
    store.mark_finished(id, sched::JobState::kCompleted, 0, "", std::nullopt, 1234567.5);
  }
  gpu::SimulatedGpuSpec broken;
  broken.idle_power_w = std::numeric_limits<double>::quiet_NaN();  // a sensor that reads nothing sensible
  HttpApi api(dir.file("jobs.db"), "secret",
              {std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{}),
               std::make_shared<gpu::SimulatedDevice>(1, broken)});
  HttpServer server(api, "127.0.0.1", 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_bearer_token_auth("secret");
  auto reply = client.Get("/metrics");
  ASSERT_EQ(reply->status, 200);
  EXPECT_EQ(reply->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  std::vector<std::string> faults = exposition_faults(reply->body);
  std::string all;
  for (const auto& f : faults) all += f + "\n";
  EXPECT_TRUE(faults.empty()) << all << "---\n" << reply->body;
  EXPECT_NE(reply->body.find("colo_job_energy_joules_total 1234567.5\n"), std::string::npos) << "all its digits";
  EXPECT_NE(reply->body.find("colo_gpu_power_watts{gpu=\"1\"} NaN\n"), std::string::npos) << reply->body;
  // A 0-1 quantity's name ends in _ratio, as Prometheus names units.
  EXPECT_NE(reply->body.find("# TYPE colo_gpu_sm_activity_ratio gauge\n"), std::string::npos) << reply->body;
  EXPECT_NE(reply->body.find("\ncolo_gpu_sm_activity_ratio{gpu=\"0\"} "), std::string::npos) << reply->body;
  EXPECT_EQ(reply->body.find("colo_gpu_sm_activity "), std::string::npos) << "the old name is gone: " << reply->body;
  EXPECT_EQ(reply->body.find("colo_gpu_sm_activity{"), std::string::npos) << "the old name is gone: " << reply->body;
}

TEST(HttpApiDashboard, GpuHistoryHasSamplesAndTheJobsPlacedOnEachGpu) {
  testing::TempDir dir;
  auto device = std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{});
  {
    sched::JobStore store(dir.file("jobs.db"));
    sched::JobSpec spec;
    spec.name = "on-gpu-0";
    spec.command = {"sleep", "1"};
    spec.mem_bytes = int64_t{2} << 30;
    int64_t id = store.submit({spec})[0];
    ASSERT_TRUE(store.mark_running(id, {0}, 1, ""));
    device->place(id, {1, *spec.mem_bytes, 0.3});
  }
  HttpApi api(dir.file("jobs.db"), "secret", {device});
  HttpServer server(api, "127.0.0.1", 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_bearer_token_auth("secret");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // the sampler ticks each second
  auto gpus = nlohmann::json::parse(client.Get("/api/gpus")->body);
  ASSERT_EQ(gpus.size(), 1u);
  ASSERT_GE(gpus[0]["samples"].size(), 1u);
  EXPECT_EQ(gpus[0]["samples"][0]["mem_used_bytes"], int64_t{2} << 30) << "a simulated GPU shows what is placed on it";
  ASSERT_EQ(gpus[0]["jobs"].size(), 1u);
  EXPECT_EQ(gpus[0]["jobs"][0]["name"], "on-gpu-0");
  EXPECT_TRUE(gpus[0]["jobs"][0]["end_s"].is_null()) << "still running";
}

// The kinds of `row`'s bars, in order, leaving out QUEUED ones.
std::vector<std::string> run_kinds(const nlohmann::json& row) {
  std::vector<std::string> kinds;
  for (const auto& bar : row["bars"]) {
    if (bar["kind"] != "QUEUED") kinds.push_back(bar["kind"]);
  }
  return kinds;
}

TEST(HttpApiDashboard, TheGanttShowsQueuedJobsEveryRunOfARequeuedJobAndALegendForEachColour) {
  testing::TempDir dir;
  std::vector<sched::JobRun> requeued_runs;
  {
    sched::JobStore store(dir.file("jobs.db"));
    auto job = [](const std::string& name) {
      sched::JobSpec spec;
      spec.name = name;
      spec.command = {"true"};
      return spec;
    };
    auto ids = store.submit({job("waits"), job("requeued"), job("oom-then-done"), job("cancelled-waiting")});
    ASSERT_TRUE(store.mark_running(ids[1], {0}, 1, ""));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    store.mark_requeued(ids[1], "its process was lost");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(store.mark_running(ids[1], {0}, 2, ""));
    requeued_runs = store.runs(ids[1]);
    ASSERT_TRUE(store.mark_running(ids[2], {0}, 3, ""));
    store.mark_finished(ids[2], sched::JobState::kOutOfMemory, 1, "oom", std::nullopt, 0);
    ASSERT_TRUE(store.mark_running(ids[2], {0}, 4, ""));
    store.mark_finished(ids[2], sched::JobState::kCompleted, 0, "", std::nullopt, 0);
    store.cancel(ids[3]);
  }
  HttpApi api(dir.file("jobs.db"), "secret", {});
  HttpServer server(api, "127.0.0.1", 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_bearer_token_auth("secret");
  auto reply = client.Get("/api/gantt");
  ASSERT_EQ(reply->status, 200);
  auto gantt = nlohmann::json::parse(reply->body);
  ASSERT_EQ(gantt["rows"].size(), 4u) << "queued jobs are rows too: " << gantt.dump();
  EXPECT_EQ(gantt["left_out"], 0);
  const auto& rows = gantt["rows"];

  EXPECT_EQ(rows[0]["label"], "1 waits");
  ASSERT_EQ(rows[0]["bars"].size(), 1u);
  EXPECT_EQ(rows[0]["bars"][0]["kind"], "QUEUED") << "a waiting job waits until now";
  EXPECT_DOUBLE_EQ(rows[0]["bars"][0]["from_s"].get<double>(), 0.0) << "from its submission, the chart's start";

  EXPECT_EQ(run_kinds(rows[1]), (std::vector<std::string>{"REQUEUED", "RUNNING"}));
  const double t0 = gantt["t0_s"];
  for (const auto& bar : rows[1]["bars"]) {
    if (bar["kind"] != "REQUEUED") continue;
    EXPECT_NEAR(bar["from_s"].get<double>() + t0, requeued_runs[0].start_s, 1e-3) << "the first run, not queued time";
    EXPECT_NEAR(bar["to_s"].get<double>() + t0, requeued_runs[0].end_s.value_or(0), 1e-3);
  }
  ASSERT_GE(rows[1]["bars"].size(), 3u);
  EXPECT_EQ(rows[1]["bars"][rows[1]["bars"].size() - 2]["kind"], "QUEUED") << "it waited again between its runs";

  EXPECT_EQ(run_kinds(rows[2]), (std::vector<std::string>{"OUT_OF_MEMORY", "COMPLETED"}));
  EXPECT_EQ(rows[2]["label"], "3 oom-then-done (OOM x1)");
  EXPECT_EQ(run_kinds(rows[3]), std::vector<std::string>{}) << "cancelled before it ran: only queued time";

  std::set<std::string> drawn, named, colours;
  for (const auto& row : rows) {
    for (const auto& bar : row["bars"]) {
      drawn.insert(bar["kind"]);
      EXPECT_LE(bar["from_s"].get<double>(), bar["to_s"].get<double>());
    }
  }
  for (const auto& key : gantt["legend"]) {
    named.insert(key["kind"]);
    colours.insert(key["colour"]);
    EXPECT_FALSE(key["label"].get<std::string>().empty());
  }
  EXPECT_EQ(named, drawn) << "the legend names every kind of bar drawn, and no other: " << gantt["legend"].dump();
  EXPECT_EQ(colours.size(), named.size()) << "each kind its own colour";
  EXPECT_EQ(named.size(), 5u) << "queued, running, completed, OOM, requeued";
}

TEST(HttpApiDashboard, TheGanttKeepsRunningAndQueuedJobsBeforeOldFinishedOnes) {
  std::vector<sched::JobRecord> jobs(50);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].id = static_cast<int64_t>(i + 1);
    jobs[i].state = sched::JobState::kCompleted;
  }
  jobs[2].state = sched::JobState::kRunning;
  jobs[45].state = sched::JobState::kRunning;
  jobs[48].state = sched::JobState::kPending;
  jobs[49].state = sched::JobState::kRequeued;
  auto shown = gantt_jobs(jobs, 5);
  std::vector<int64_t> ids;
  for (const auto& j : shown) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{3, 46, 48, 49, 50})) << "running, waiting, then the latest finished, by id";
}

TEST_F(HttpApiTest, AJobsCommandLineIsQuotedAsAShellWouldReadIt) {
  auto created = client_.Post("/jobs", R"({"name": "q", "command": ["sh", "-c", "echo hi; sleep 30"]})",
                              "application/json");
  ASSERT_EQ(created->status, 201) << created->body;
  auto job = nlohmann::json::parse(client_.Get("/jobs/1")->body);
  EXPECT_EQ(job["command_line"], "sh -c 'echo hi; sleep 30'");
}

TEST(HttpApiDashboard, ATrainJobsMetricsComeFromItsOutputDirectory) {
  testing::TempDir dir;
  sched::JobRecord job;
  job.id = 7;
  job.spec.workdir = dir.path();
  job.spec.command = {"/bin/sh", "-c", "colo train spec.toml --device cuda --out runs/$COLO_JOB_ID"};
  EXPECT_EQ(train_metrics_path(job), dir.path() + "/runs/7/metrics.jsonl");
  make_directories(dir.path() + "/runs/7");
  dir.write("runs/7/metrics.jsonl", "{\"epoch\": 1, \"loss\": 0.5}\nnot json\n{\"epoch\": 2, \"loss\": 0.4}\n");
  auto records = read_metrics(train_metrics_path(job));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["epoch"], 2);
  job.spec.command = {"colo", "train", "spec.toml", "--out", "runs/$COLO_JOB_ID"};
  EXPECT_EQ(train_metrics_path(job), dir.path() + "/runs/$COLO_JOB_ID/metrics.jsonl") << "no shell: no expansion";
  job.spec.command = {"python3", "train.py", "--out", "x"};
  EXPECT_EQ(train_metrics_path(job), "") << "only colo train writes metrics.jsonl";
}

TEST(HttpApiDashboard, ASweepsModelsAreRankedByTheirLatestAccuracyWithCurves) {
  testing::TempDir dir;
  dir.write("sweep.toml", "output = \"runs/s\"\nepochs = 2\n");
  sched::JobRecord job;
  job.spec.workdir = dir.path();
  job.spec.command = {"/usr/bin/colo", "sweep", "sweep.toml", "--device", "cuda"};
  EXPECT_EQ(sweep_log_path(job), dir.path() + "/runs/s/sweep.jsonl") << "the sweep file's output";
  job.spec.command = {"/bin/sh", "-c", "colo sweep sweep.toml --output /abs/out"};
  EXPECT_EQ(sweep_log_path(job), "/abs/out/sweep.jsonl");
  job.spec.command = {"colo", "train", "sweep.toml"};
  EXPECT_EQ(sweep_log_path(job), "");
  auto records = nlohmann::json::parse(R"([
    {"model": 0, "epoch": 1, "test_accuracy": 0.80, "loss": 0.6, "values": {"lr": 0.1}, "array": 0},
    {"model": 1, "epoch": 1, "test_accuracy": 0.70, "loss": 0.8, "values": {"lr": 0.01}, "array": 0},
    {"event": "oom_split", "array": 0},
    {"model": 0, "epoch": 2, "test_accuracy": 0.75, "loss": 0.5, "values": {"lr": 0.1}, "array": 0},
    {"model": 1, "epoch": 2, "test_accuracy": 0.85, "loss": 0.4, "values": {"lr": 0.01}, "array": 1},
    {"model": "<b>2</b>", "epoch": 1, "test_accuracy": 0.9},
    {"model": 3, "epoch": 1, "test_accuracy": "0.9"},
    {"model": 4, "epoch": 1, "test_accuracy": 0.9, "array": "x"},
    {"model": 5, "epoch": "one", "test_accuracy": 0.9}])");
  auto ranked = sweep_ranking(records);
  ASSERT_EQ(ranked.size(), 2u) << "records of other types are skipped, not a 500: " << ranked.dump();
  EXPECT_EQ(ranked[0]["model"], 1) << "ranked by the latest accuracy";
  EXPECT_EQ(ranked[0]["array"], 1) << "its array after the split";
  EXPECT_DOUBLE_EQ(ranked[1]["best_test_accuracy"].get<double>(), 0.80);
  EXPECT_EQ(ranked[1]["curve"].size(), 2u);
  EXPECT_EQ(ranked[1]["epochs"], 2);
}

}  // namespace
}  // namespace colo::server
