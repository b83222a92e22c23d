// colod as a user runs it: the job commands reach it over HTTP, and a
// kill -9 of the daemon loses no job.

#include <signal.h>

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"
#include "colo/server/daemon_info.h"
#include "support/temp_dir.h"

namespace colo::server {
namespace {

class ColodTest : public ::testing::Test {
 protected:
  EnvironmentOverrides env() const { return {{"XDG_STATE_HOME", dir_.path()}, {"COLO_PROGRESS", "0"}}; }

  std::unique_ptr<ChildProcess> start_daemon(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{COLOD_EXECUTABLE, "--poll", "0.1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto daemon = std::make_unique<ChildProcess>(argv, env(), dir_.file("colod.log"));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!find_daemon(dir_.path() + "/colo") && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return daemon;
  }

  ProcessResult colo(const std::vector<std::string>& args) {
    std::vector<std::string> argv{COLO_EXECUTABLE};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, env(), "", 60);
  }

  nlohmann::json show(int id) { return nlohmann::json::parse(colo({"show", std::to_string(id)}).output); }

  // Polls `colo show` until the job is in `state`.
  void wait_for_state(int id, const std::string& state) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (show(id)["state"] != state && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // Polls `colo show` until the job's waiting reason holds `part`; the job as last shown.
  nlohmann::json wait_for_reason(int id, const std::string& part) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    nlohmann::json job = show(id);
    while (job["reason"].get<std::string>().find(part) == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      job = show(id);
    }
    return job;
  }

  // Polls `colo show` until the job is in a final state.
  nlohmann::json wait_final(int id) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    nlohmann::json job;
    while (std::chrono::steady_clock::now() < deadline) {
      job = show(id);
      std::string state = job["state"];
      if (state == "COMPLETED" || state == "FAILED" || state == "CANCELLED") return job;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return job;
  }

  // A shell command that runs until release(): a test that must find a job
  // still running cannot count on a fixed sleep outlasting its own steps
  // under load (each colo command loads LibTorch: a second or more).
  std::string until_released() const { return "while [ ! -e " + dir_.file("go") + " ]; do sleep 0.05; done"; }
  void release() const { write_file_atomically(dir_.file("go"), ""); }

  // Polls colod.log until it holds `line`.
  bool wait_for_log(const std::string& line) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (read_file(dir_.file("colod.log")).find(line) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  }

  testing::TempDir dir_;
};

TEST_F(ColodTest, JobCommandsTalkToTheDaemon) {
  auto daemon = start_daemon();
  auto info = find_daemon(dir_.path() + "/colo");
  ASSERT_TRUE(info) << read_file(dir_.file("colod.log"));
  auto second = run_process({COLOD_EXECUTABLE}, env(), "", 20);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.output.find("already running"), std::string::npos) << second.output;

  auto submitted = colo({"submit", "--name", "greet", "--", "sh", "-c", "echo hello from colod"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  EXPECT_EQ(submitted.output, "1\n");
  auto job = wait_final(1);
  EXPECT_EQ(job["state"], "COMPLETED") << job.dump();
  EXPECT_EQ(colo({"logs", "1"}).output, "hello from colod\n") << job.dump();
  EXPECT_NE(colo({"queue"}).output.find("greet"), std::string::npos);
  auto bad = colo({"show", "7"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("no job 7"), std::string::npos) << bad.output;
  daemon->terminate(5);
  daemon->wait();
  EXPECT_FALSE(find_daemon(dir_.path() + "/colo"));
  EXPECT_FALSE(path_exists(dir_.path() + "/colo/colod.json"));
}

TEST_F(ColodTest, AJobFileRunsWhereItWasSubmittedFromNotInTheDaemonsDirectory) {
  auto daemon = start_daemon();
  ASSERT_TRUE(find_daemon(dir_.path() + "/colo")) << read_file(dir_.file("colod.log"));
  std::string project = dir_.file("project");
  make_directories(project + "/sub");
  write_file_atomically(project + "/job.toml", "[[job]]\ncommand = \"pwd > where.txt\"\n"
                                               "[[job]]\ncommand = \"pwd > where.txt\"\nworkdir = \"sub\"\n");
  std::string command = "cd " + project + " && " + COLO_EXECUTABLE + " submit --file job.toml";
  auto submitted = run_process({"/bin/sh", "-c", command}, env(), "", 60);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  EXPECT_EQ(wait_final(1)["state"], "COMPLETED");
  EXPECT_EQ(wait_final(2)["state"], "COMPLETED") << read_file(dir_.file("colod.log"));
  EXPECT_EQ(read_file(project + "/where.txt"), project + "\n");
  EXPECT_EQ(read_file(project + "/sub/where.txt"), project + "/sub\n");
  daemon->terminate(5);
  daemon->wait();
}

// colo run's measuring flags are colod's too: it starts with them and runs a job.
TEST_F(ColodTest, ItTakesColoRunsShareMeasuringFlags) {
  auto daemon = start_daemon({"--no-probe-alone", "--shares-from-launch"});
  ASSERT_TRUE(find_daemon(dir_.path() + "/colo")) << read_file(dir_.file("colod.log"));
  ASSERT_EQ(colo({"submit", "--name", "plain", "--", "true"}).exit_code, 0);
  EXPECT_EQ(wait_final(1)["state"], "COMPLETED") << read_file(dir_.file("colod.log"));
  daemon->terminate(5);
  daemon->wait();
}

TEST_F(ColodTest, BadOptionsAreExitStatus2) {
  for (const auto& option : std::vector<std::vector<std::string>>{{"--policy", "nope"}, {"--port", "99999"},
                                                                  {"--poll", "0"}, {"--mode", "shared-ish"},
                                                                  {"--cpu-slots", "0"}}) {
    std::vector<std::string> argv{COLOD_EXECUTABLE};
    argv.insert(argv.end(), option.begin(), option.end());
    auto run = run_process(argv, env(), "", 20);
    EXPECT_EQ(run.exit_code, 2) << option[0] << ": " << run.output;
    EXPECT_NE(run.output.find(option[0]), std::string::npos) << run.output;
  }
  EXPECT_FALSE(find_daemon(dir_.path() + "/colo"));
}

// kill -9 of colod: the running job is adopted by the next colod and the
// queued one starts there, each run once. The first job runs until the
// test lets it end, not for a fixed time: a 1.5 s sleep could end before the
// kill under load, and the kill then fell among the queued job's launch.
TEST_F(ColodTest, KillNineOfTheDaemonLosesNoJob) {
  auto daemon = start_daemon();
  std::string ran = dir_.file("ran");
  std::string slow_job = "echo x >> " + ran + "; " + until_released() + "; echo slow done";
  ASSERT_EQ(colo({"submit", "--name", "slow", "--", "sh", "-c", slow_job}).exit_code, 0);
  ASSERT_EQ(colo({"submit", "--name", "queued", "--", "sh", "-c", "echo queued done"}).exit_code, 0);
  wait_for_state(1, "RUNNING");
  ASSERT_EQ(show(1)["state"], "RUNNING") << read_file(dir_.file("colod.log"));
  ::kill(daemon->pid(), SIGKILL);
  daemon->wait();
  // Without a daemon the commands read the store directly.
  EXPECT_NE(colo({"queue"}).output.find("queued"), std::string::npos);
  auto restarted = start_daemon();
  ASSERT_TRUE(find_daemon(dir_.path() + "/colo")) << read_file(dir_.file("colod.log"));
  release();  // the restarted colod has adopted it: it may end now
  auto slow = wait_final(1);
  EXPECT_EQ(slow["state"], "COMPLETED") << slow.dump();
  EXPECT_EQ(slow["attempts"], 1) << "adopted, not rerun";
  EXPECT_EQ(read_file(ran), "x\n");
  EXPECT_EQ(colo({"logs", "1"}).output, "slow done\n");
  EXPECT_EQ(wait_final(2)["state"], "COMPLETED");
  EXPECT_EQ(colo({"logs", "2"}).output, "queued done\n") << "run once";
  restarted->terminate(5);
}

// An upgrade or a service restart sends SIGTERM: the running job must not
// lose its progress. It keeps running; the next colod adopts it, and it
// completes having started once.
TEST_F(ColodTest, AGracefulStopLeavesRunningJobsForTheNextDaemon) {
  auto daemon = start_daemon();
  std::string marker = dir_.file("ran");
  std::string long_job = "echo x >> " + marker + "; " + until_released() + "; echo long done";
  ASSERT_EQ(colo({"submit", "--name", "long", "--", "sh", "-c", long_job}).exit_code, 0);
  wait_for_state(1, "RUNNING");
  daemon->terminate(10);
  daemon->wait();
  EXPECT_NE(read_file(dir_.file("colod.log")).find("keep running"), std::string::npos) << read_file(dir_.file("colod.log"));
  EXPECT_EQ(show(1)["state"], "RUNNING") << "the store still says RUNNING; the process lives on";
  auto restarted = start_daemon();
  ASSERT_TRUE(find_daemon(dir_.path() + "/colo")) << read_file(dir_.file("colod.log"));
  release();  // adopted by now
  auto job = wait_final(1);
  EXPECT_EQ(job["state"], "COMPLETED") << job.dump();
  EXPECT_EQ(job["attempts"], 1) << "adopted, not rerun";
  EXPECT_EQ(read_file(marker), "x\n");
  EXPECT_EQ(colo({"logs", "1"}).output, "long done\n");
  restarted->terminate(5);
}

// --drain: the stop waits for the running job to end and starts nothing new;
// a job that was waiting stays queued, saying why.
TEST_F(ColodTest, DrainWaitsForRunningJobsAndStartsNoNewOne) {
  auto daemon = start_daemon({"--drain", "--policy", "exclusive", "--mode", "exclusive"});
  ASSERT_EQ(colo({"submit", "--name", "first", "--", "sh", "-c", until_released()}).exit_code, 0);
  ASSERT_EQ(colo({"submit", "--name", "second", "--", "true"}).exit_code, 0);
  wait_for_state(1, "RUNNING");
  // The round that starts job 1 writes job 2's reason after job 1's state.
  auto waiting = wait_for_reason(2, "busy");
  EXPECT_NE(waiting["reason"].get<std::string>().find("busy"), std::string::npos)
      << "a waiting job says why: " << waiting.dump();
  ::kill(daemon->pid(), SIGTERM);
  EXPECT_TRUE(wait_for_log("colod: draining: waiting for 1 running job(s)")) << read_file(dir_.file("colod.log"));
  release();
  daemon->wait();
  EXPECT_EQ(show(1)["state"], "COMPLETED") << "drained: the running job ended before colod did\n"
                                           << read_file(dir_.file("colod.log"));
  auto second = show(2);
  EXPECT_EQ(second["state"], "PENDING");
  EXPECT_EQ(second["reason"], "queued: no scheduler is running (colod drained and stopped)")
      << "not the drain's hold, which outlived colod";
  EXPECT_NE(read_file(dir_.file("colod.log")).find("colod: drained: no job runs; 1 job(s) stay queued"),
            std::string::npos) << read_file(dir_.file("colod.log"));
}

}  // namespace
}  // namespace colo::server
