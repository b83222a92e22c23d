// colod: the colo daemon. Runs the jobs of a store on this machine's GPUs
// (the same scheduler as `colo run`) and serves the HTTP/JSON API that
// `colo submit`, `colo queue`, `colo show`, `colo cancel` and `colo logs`
// talk to, on 127.0.0.1 with a token file only its user can read.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "colo/core/error.h"
#include "colo/core/interrupt_cleanup.h"
#include "colo/core/log.h"
#include "colo/gpu/device.h"
#include "colo/sched/runner.h"
#include "colo/server/daemon_info.h"
#include "colo/server/http_api.h"
#include "colo/sched/admission.h"
#include "colo/server/token.h"

int main(int argc, char** argv) {
  colo::init_logging();
  CLI::App app{"colod: the colo daemon (scheduler + HTTP API on 127.0.0.1)"};
  std::string state_dir = colo::sched::state_directory();
  std::string store, policy = "magm", mode = "mps", recovery = "alone";
  int port = 0;
  double poll_s = 0.5, reserve_after_s = 0;
  int cpu_slots = 1;
  bool drain = false;
  bool no_probe_alone = false;
  bool shares_from_launch = false;
  std::vector<std::string> learn_from;
  app.add_option("--state-dir", state_dir, "where the token, colod.json and (by default) the store live")
      ->capture_default_str();
  app.add_option("--store", store, "job store (default: STATE_DIR/jobs.db)");
  app.add_option("--port", port, "TCP port on 127.0.0.1 (0: a free one, written to STATE_DIR/colod.json)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--policy", policy, "exclusive | round-robin | magm | lug | best-fit")->capture_default_str();
  app.add_option("--mode", mode, "exclusive | shared | mps")->capture_default_str();
  app.add_option("--recovery", recovery, "OOM recovery: alone | peak-margin")->capture_default_str();
  app.add_option("--poll", poll_s, "seconds between scheduling rounds")->capture_default_str();
  app.add_option("--reserve-after", reserve_after_s,
                 "a job waiting this long (s) that does not fit stops later jobs from starting (0: never)")
      ->capture_default_str();
  app.add_option("--cpu-slots", cpu_slots,
                 "on a host without a GPU: jobs that run at once (those reading one shared loader share it)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_flag("--no-probe-alone", no_probe_alone,
               "measure a new job's SM share beside the jobs on its GPU instead of pausing them for about 4 s");
  app.add_flag("--shares-from-launch", shares_from_launch,
               "under MPS, a job's known SM share counts on its GPU from its launch, not from when it trains");
  app.add_option("--learn-from", learn_from,
                 "another job store (DB) whose measured SM shares, peaks and rates alone colod starts from "
                 "(repeatable; its own store's measurements win)")
      ->check(CLI::ExistingFile);
  app.add_flag("--drain", drain,
               "on SIGTERM/SIGINT, start no new job and wait for the running ones to end (default: leave them "
               "running for the next colod to adopt)");
  app.footer("\nStopping colod (SIGTERM, SIGINT) never kills a job: running jobs keep running and the next colod\n"
             "on the same store adopts them; with --drain it first waits for them to end. Queued jobs stay queued.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : colo::kExitBadInput;
  }
  try {
    if (store.empty()) store = state_dir + "/jobs.db";
    if (auto running = colo::server::find_daemon(state_dir)) {
      std::fprintf(stderr, "colod: already running (pid %d, port %d) for %s\n", running->pid, running->port,
                   state_dir.c_str());
      return 1;
    }
    colo::sched::RunnerOptions options = colo::sched::runner_options_from_names(policy, mode, recovery, poll_s, reserve_after_s);
    options.cpu_slots = cpu_slots;
    if (no_probe_alone) options.thresholds.probe_alone = false;
    if (shares_from_launch) options.thresholds.count_shares_once_training = false;
    options.learn_from = learn_from;
    options.estimate_model = colo::sched::scheduler_estimate();
    options.estimator_version = colo::sched::scheduler_estimator_version();
    std::string token = colo::server::read_or_create_token(colo::server::token_path(state_dir));

    auto devices = colo::gpu::discover_devices();
    colo::sched::JobStore scheduler_store(store);
    colo::sched::Runner runner(scheduler_store, devices, options);
    runner.recover();
    colo::server::HttpApi api(store, token, devices);
    colo::server::HttpServer http(api, "127.0.0.1", port);
    colo::server::publish_daemon(state_dir, {"127.0.0.1", http.port(), static_cast<int>(::getpid()), store});
    int pid = static_cast<int>(::getpid());
    // The runner is not thread-safe: the signal's cleanup asks the loop below
    // to stop and waits until it has detached (or drained).
    std::atomic<bool> stop_requested{false};
    std::promise<void> stopped;
    std::future<void> stopped_future = stopped.get_future();
    colo::add_interrupt_cleanup([&stop_requested, &stopped_future, state_dir, pid] {
      colo::server::withdraw_daemon(state_dir, pid);
      stop_requested = true;
      stopped_future.wait();
    });
    std::fprintf(stderr, "colod: pid %d serving %s on http://127.0.0.1:%d (token in %s), %zu GPU(s), policy %s, mode %s\n",
                 pid, store.c_str(), http.port(), colo::server::token_path(state_dir).c_str(), devices.size(),
                 policy.c_str(), mode.c_str());
    while (!stop_requested) {
      runner.step();
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
    }
    if (drain) {
      runner.hold_new_jobs(true);
      std::fprintf(stderr, "colod: draining: waiting for %zu running job(s) to end\n", runner.running());
      while (runner.running() > 0) {
        runner.step();
        std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
      }
      size_t queued = scheduler_store.list({colo::sched::JobState::kPending, colo::sched::JobState::kRequeued,
                                            colo::sched::JobState::kOutOfMemory}).size();
      std::fprintf(stderr, "colod: drained: no job runs; %zu job(s) stay queued for the next scheduler\n", queued);
    } else {
      std::fprintf(stderr, "colod: stopping; %zu running job(s) keep running for the next colod to adopt\n",
                   runner.running());
    }
    runner.detach(drain ? "colod drained and stopped" : "colod stopped; running jobs were left to the next one");
    stopped.set_value();
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));  // the signal ends the process
  } catch (const colo::InputError& e) {
    std::fprintf(stderr, "colod: error: %s\n", e.what());
    return colo::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "colod: error: %s\n", e.what());
    return 1;
  }
}
