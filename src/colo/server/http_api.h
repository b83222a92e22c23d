#pragma once
// colod's HTTP/JSON API over a job store. Every route but /healthz needs
// the token (header "Authorization: Bearer TOKEN", or ?token=TOKEN for a
// browser):
//   POST /jobs                 body: a job (JSON, as sched::to_json(JobSpec)) or an array of them
//                              -> {"ids": [...]}; 400 naming the field for a bad job
//   GET  /jobs[?state=S,...]   -> [record, ...]
//   GET  /jobs/ID              -> record, with command_line: its command as a shell would read it
//                                 (core/shell_words.h); 404 for an unknown id
//   POST /jobs/ID/cancel       -> {"id", "before", "after"}
//   GET  /jobs/ID/log?offset=N -> the log from byte N (header X-Colo-Final: 1 once the job is final)
//   GET  /jobs/ID/metrics      -> a `colo train` job's metrics.jsonl records (its --out); [] otherwise
//   GET  /jobs/ID/sweep        -> a `colo sweep` job's models ranked with their curves; [] otherwise
//   GET  /metrics              -> Prometheus text: jobs by state, OOM deaths, energy, GPU telemetry
//   GET  /api/gpus             -> per GPU: the last 15 min of memory, SM activity and power, and its jobs
//   GET  /api/gantt            -> the Gantt chart's rows and legend (dashboard_data.h, gantt_json) for
//                                 up to 40 jobs (gantt_jobs), queued ones included; left_out: the others
//   GET  /                     -> the dashboard (dashboard/index.html: live charts per GPU, a Gantt
//                                 view of jobs, a page per job with its log); opened once with
//                                 ?token=, it gets the token as an HttpOnly cookie and drops it
//                                 from the address bar
//   GET  /static/chart.min.js  -> Chart.js (Debian's libjs-chart.js; no token: a public library)
// The token may also come as the cookie colo_token.

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "colo/gpu/device.h"
#include "colo/gpu/sampler.h"
#include "colo/sched/store.h"

namespace httplib {
class Server;
}

namespace colo::server {

class HttpApi {
 public:
  // Opens its own connection to the store at `store_path` (SQLite in WAL
  // mode lets the scheduler keep its own). `devices` feed /metrics and the
  // dashboard (may be empty).
  HttpApi(const std::string& store_path, std::string token, std::vector<gpu::DevicePtr> devices);
  ~HttpApi();

  // Adds the routes and the token check to `server`.
  void mount(httplib::Server& server);

  // The Prometheus exposition of the store and devices right now.
  std::string metrics();
  // /api/gpus as JSON.
  nlohmann::json gpu_history();
  // /api/gantt as JSON.
  nlohmann::json gantt();

 private:
  std::mutex mutex_;  // the store connection is used by one handler at a time
  sched::JobStore store_;
  std::string token_;
  std::vector<gpu::DevicePtr> devices_;
  std::unique_ptr<gpu::Sampler> sampler_;  // the charts' history; null without devices
};

// Serves `api` on HOST:PORT (PORT 0: a free one) on a background thread.
class HttpServer {
 public:
  HttpServer(HttpApi& api, const std::string& host, int port);
  ~HttpServer();  // stops listening and joins the thread
  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::unique_ptr<std::thread> thread_;
};

}  // namespace colo::server
