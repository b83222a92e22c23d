// `colo run`: a batch of real processes through the runner and the store.

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/colo_process.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/stopwatch.h"
#include "colo/core/subprocess.h"
#include "colo/sched/store.h"

namespace colo {
namespace {

using testing::run_colo;
using testing::TempDir;

nlohmann::json summary_of(const TempDir& dir) { return nlohmann::json::parse(read_file(dir.file("sum.json"))); }

TEST(ColoRun, CollocatesSmallJobsOnOneGpu) {
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\nname = \"s\"\ncommand = \"sleep 1\"\nmem = \"10GiB\"\nsm_share = 0.2\narray = \"0-3\"\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " --policy magm --poll 0.1 --summary-json " + dir.file("sum.json"),
                      "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(summary_of(dir)["completed"], 4);
  // The batch's own span, so that a slow start of the colo process (loading
  // LibTorch on a busy machine) does not count.
  EXPECT_LT(summary_of(dir)["total_s"].get<double>(), 2.8) << "four 1 s jobs side by side, not one after another";
}

// On one simulated 80 GiB GPU: A (50 GiB) runs; B (60 GiB) does not fit
// beside it; C (20 GiB) does. Greedy backfilling starts C before B ends;
// with --reserve-after, B (waiting) holds C back until B has run.
TEST(ColoRun, ReserveAfterStopsSmallJobsOvertakingALargeOne) {
  for (bool reserve : {false, true}) {
    TempDir dir;
    auto stamp = [&](const std::string& file) { return "date +%s.%N > " + dir.file(file); };
    dir.write("jobs.toml",
              "[[job]]\nname = \"A\"\ncommand = \"sleep 1.5\"\nmem = \"50GiB\"\nsm_share = 0.1\n"
              "[[job]]\nname = \"B\"\ncommand = \"sleep 0.5; " + stamp("B.end") + "\"\nmem = \"60GiB\"\nsm_share = 0.1\n"
              "[[job]]\nname = \"C\"\ncommand = \"" + stamp("C.start") + "; sleep 0.5\"\nmem = \"20GiB\"\nsm_share = 0.1\n");
    auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " --policy magm --poll 0.05" +
                                 (reserve ? " --reserve-after 0.000001" : ""),
                        "COLO_SIMULATED_GPUS=1");
    ASSERT_EQ(run.status, 0) << run.err;
    double b_end = std::stod(read_file(dir.file("B.end"))), c_start = std::stod(read_file(dir.file("C.start")));
    if (reserve) {
      EXPECT_GE(c_start, b_end) << "C waited for the reserved B";
    } else {
      EXPECT_LT(c_start, b_end) << "C backfilled past B";
    }
  }
}

TEST(ColoRun, NegativeReservationIsABadInput) {
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\ncommand = \"true\"\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " --reserve-after -1", "COLO_SIMULATED_GPUS=1");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--reserve-after"), std::string::npos) << run.err;
}

TEST(ColoRun, ExclusiveRunsOneJobPerGpu) {
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\ncommand = \"sleep 0.5\"\nmem = \"1GiB\"\narray = \"0-3\"\n");
  Stopwatch clock;
  auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " --policy exclusive --mode exclusive --poll 0.05",
                      "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_GT(clock.elapsed_s(), 2.0);
}

TEST(ColoRun, OutOfMemoryDeathIsRetriedAndFailuresAreReported) {
  TempDir dir;
  dir.write("jobs.toml",
            "[[job]]\nname = \"oom-once\"\nworkdir = \"" + dir.path() + "\"\nmem = \"1GiB\"\n"
            "command = \"if [ -f marker ]; then exit 0; fi; touch marker; echo 'torch.OutOfMemoryError: CUDA out of memory.'; exit 1\"\n"
            "[[job]]\nname = \"broken\"\ncommand = \"echo bad input; exit 3\"\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " --poll 0.05 --summary-json " + dir.file("sum.json"),
                      "COLO_SIMULATED_GPUS=1");
  EXPECT_EQ(run.status, 1) << "a failed job makes the batch fail";
  auto summary = summary_of(dir);
  EXPECT_EQ(summary["completed"], 1);
  EXPECT_EQ(summary["failed"], 1);
  EXPECT_EQ(summary["oom_events"], 1);
  EXPECT_EQ(summary["jobs_lost"], 0);
  EXPECT_NE(run.out.find("exit status 3"), std::string::npos) << run.out;
  auto history = run_colo(dir, "history --store " + dir.file("jobs.toml.colo/jobs.db"));
  ASSERT_EQ(history.status, 0) << history.err;
  EXPECT_NE(history.out.find("1 completed, 1 failed, 1 OOM deaths (0 false), 0 not final"), std::string::npos) << history.out;
}

TEST(ColoRun, BadJobFileChangesNothing) {
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\ncommand = \"true\"\nmem = \"huge\"\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml"));
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("job[0].mem: expected a size"), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("jobs.toml.colo")));
}

// `colo run` of one job with `options` exits 2 naming `named` and submits
// nothing: running again would otherwise run the job twice.
void expect_refused_before_submitting(TempDir& dir, const std::string& options, const std::string& named) {
  dir.write("jobs.toml", "[[job]]\ncommand = \"true\"\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " " + options);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find(named), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("jobs.toml.colo"))) << "the job was submitted: running again would run it twice";
}

TEST(ColoRun, AnUnwritableOutputDirectorySubmitsNothing) {
  TempDir dir;
  dir.write("a_file", "not a directory");
  expect_refused_before_submitting(dir, "--out " + dir.file("a_file/report"), "--out");
}

TEST(ColoRun, AStoreToLearnFromThatIsNoneSubmitsNothing) {
  TempDir dir;
  dir.write("not_a_store.db", "plain text, not SQLite");
  expect_refused_before_submitting(dir, "--learn-from " + dir.file("not_a_store.db"), "not_a_store.db");
  auto missing = run_colo(dir, "run " + dir.file("jobs.toml") + " --learn-from " + dir.file("no_such.db"));
  EXPECT_EQ(missing.status, 2) << missing.err;
  EXPECT_FALSE(path_exists(dir.file("jobs.toml.colo")));
}

TEST(ColoRun, AJobOfMoreGpusThanTheHostHasIsRefusedNotLeftWaiting) {
  // Also on a host without a GPU (CI), where jobs run one at a time, each
  // as if given one: there it once waited for ever.
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\ncommand = \"true\"\ngpus = 64\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml"));
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("asks for 64 GPUs; this host has"), std::string::npos) << run.err;
  EXPECT_FALSE(path_exists(dir.file("jobs.toml.colo")));
}

TEST(ColoSubmit, ValuesNoJobCouldHaveAreRefusedNotStored) {
  TempDir dir;
  for (const char* option : {"--sm-share -0.5", "--sm-share nan", "--array 0-100000000", "--array 0-31x",
                             "--mem 99999999999999GiB", "--mem 0", "--mem 0GiB", "--autocast bf16"}) {
    auto run = run_colo(dir, "submit --store " + dir.file("jobs.db") + " " + option + " -- true");
    EXPECT_EQ(run.status, 2) << option << ": " << run.err;
    EXPECT_NE(run.err.find(std::string(option).substr(0, std::string(option).find(' '))), std::string::npos) << run.err;
  }
  auto queue = run_colo(dir, "queue --store " + dir.file("jobs.db"));
  EXPECT_EQ(queue.out.find("true"), std::string::npos) << "a refused job was stored: " << queue.out;
}

TEST(ColoSubmit, AJobFileAskingForNoMemoryIsRefusedOnOneLineNothingStored) {
  TempDir dir;
  for (const char* mem : {"0", "0GiB", "-1GiB"}) {
    const std::string file = dir.write("jobs.toml", std::string("[[job]]\ncommand = \"true\"\nmem = \"") + mem + "\"\n");
    for (const std::string& command : {"run " + file, "submit --store " + dir.file("jobs.db") + " --file " + file}) {
      auto run = run_colo(dir, command);
      EXPECT_EQ(run.status, 2) << command << " (mem " << mem << "): " << run.err;
      EXPECT_NE(run.err.find(file), std::string::npos) << run.err;
      EXPECT_NE(run.err.find("mem: expected a size above zero"), std::string::npos) << run.err;
      EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << "one line: " << run.err;
    }
  }
  EXPECT_FALSE(path_exists(dir.file("jobs.toml.colo")));
  auto queue = run_colo(dir, "queue --store " + dir.file("jobs.db"));
  EXPECT_EQ(queue.out.find("true"), std::string::npos) << "a refused job was stored: " << queue.out;
}

TEST(ColoQueue, AJobNameWithControlCharactersStaysOnOneRowEscaped) {
  TempDir dir;
  const std::string store = dir.file("jobs.db");
  // Names as `colo submit --name` takes them, raw bytes inside the shell's quotes.
  for (const char* name : {"two\nlines\tand\x1b[31mred", "größe-λ"}) {
    auto submit = run_colo(dir, "submit --store " + store + " --name '" + name + "' -- true");
    ASSERT_EQ(submit.status, 0) << submit.err;
  }
  auto queue = run_colo(dir, "queue --store " + store);
  ASSERT_EQ(queue.status, 0) << queue.err;
  EXPECT_EQ(std::count(queue.out.begin(), queue.out.end(), '\n'), 3) << "a header and one row a job:\n" << queue.out;
  EXPECT_NE(queue.out.find("two\\nlines\\tand\\x1b[31mred"), std::string::npos) << queue.out;
  EXPECT_EQ(queue.out.find('\x1b'), std::string::npos) << "no escape sequence reaches the terminal";
  EXPECT_NE(queue.out.find("größe-λ"), std::string::npos) << "UTF-8 kept as it is: " << queue.out;
}

TEST(ColoQueue, ShowsTheSmShareAJobSettledAt) {
  TempDir dir;
  const std::string store = dir.file("jobs.db");
  for (const char* name : {"settled", "declared"}) {
    auto submit = run_colo(dir, "submit --store " + store + " --name " + name + " -- true");
    ASSERT_EQ(submit.status, 0) << submit.err;
  }
  sched::JobStore(store).record_sm_share(1, 0.37);
  auto queue = run_colo(dir, "queue --store " + store);
  ASSERT_EQ(queue.status, 0) << queue.err;
  std::istringstream lines(queue.out);
  std::string header, settled, other;
  std::getline(lines, header);
  std::getline(lines, settled);
  std::getline(lines, other);
  const size_t column = header.find("sm_share");
  ASSERT_NE(column, std::string::npos) << queue.out;
  auto cell = [column](const std::string& row) {
    std::istringstream words(row.substr(column, std::string("sm_share").size()));
    std::string word;
    words >> word;
    return word;
  };
  EXPECT_EQ(cell(settled), "0.37") << "under its header:\n" << queue.out;
  EXPECT_EQ(cell(other), "-") << "no share measured:\n" << queue.out;
}

TEST(ColoRun, ItsTableAndHistoryShowAJobNamesControlCharactersEscaped) {
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\nname = \"line\\none\\ttab\"\ncommand = \"true\"\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " --poll 0.05", "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("line\\none\\ttab"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("line\none"), std::string::npos) << run.out;
  auto history = run_colo(dir, "history --store " + dir.file("jobs.toml.colo/jobs.db"));
  ASSERT_EQ(history.status, 0) << history.err;
  EXPECT_NE(history.out.find("line\\none\\ttab"), std::string::npos) << history.out;
  EXPECT_EQ(history.out.find("line\none"), std::string::npos) << history.out;
}

// Kill -9 colo mid-run, restart it on the same store: every job runs
// exactly once (each appends its index to a ledger).
TEST(ColoRun, SurvivesKillNineWithoutLosingOrRepeatingJobs) {
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\nname = \"j\"\nmem = \"30GiB\"\nsm_share = 0.3\narray = \"0-7\"\n"
                         "command = \"touch " + dir.file("started") + "; sleep 1; echo $COLO_ARRAY_INDEX >> " +
                         dir.file("ledger") + "\"\n");
  ChildProcess first({COLO_EXECUTABLE, "run", dir.file("jobs.toml"), "--store", dir.file("jobs.db"), "--poll", "0.1"},
                     {{"COLO_SIMULATED_GPUS", "1"}}, dir.file("first.log"));
  // Kill it while its first jobs run (colo itself may take seconds to start).
  Stopwatch waited;
  while (!path_exists(dir.file("started")) && waited.elapsed_s() < 30) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(first.pid(), SIGKILL);
  first.wait();
  // Restarted as it was first started, the file given again: its jobs are
  // resumed, not submitted a second time.
  auto second = run_colo(dir, "run " + dir.file("jobs.toml") + " --store " + dir.file("jobs.db") +
                                  " --poll 0.1 --summary-json " + dir.file("sum.json"),
                         "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(second.status, 0) << second.err << read_file(dir.file("first.log"));
  EXPECT_NE(second.err.find("was submitted to " + dir.file("jobs.db") + " before (8 job(s), ids 1-8); resuming them"),
            std::string::npos) << second.err;
  EXPECT_EQ(summary_of(dir)["completed"], 8);
  EXPECT_EQ(summary_of(dir)["jobs"], 8) << "nothing submitted twice";
  std::map<int, int> runs;
  std::istringstream ledger(read_file(dir.file("ledger")));
  for (int index; ledger >> index;) ++runs[index];
  ASSERT_EQ(runs.size(), 8u);
  for (const auto& [index, count] : runs) EXPECT_EQ(count, 1) << "job " << index;
}

// The state letter of process `pid` in /proc (T: stopped), '?' when gone.
char process_state(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return '?';
  size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '?';
}

bool wait_for(const std::function<bool()>& done, double timeout_s) {
  Stopwatch waited;
  while (!done()) {
    if (waited.elapsed_s() > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Job 2 settles 4 s after its first progress report: job 1 pauses for
// about 4 s meanwhile, and colo run's summary says what that cost.
TEST(ColoRun, ItsSummaryCountsThePausesThatMeasuredSharesAlone) {
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\nname = \"known\"\nmem = \"10GiB\"\nsm_share = 0.3\ncommand = \"sleep 11\"\n"
                         "[[job]]\nname = \"new\"\nmem = \"10GiB\"\n"
                         "command = \"echo '{\\\"samples\\\": 1, \\\"train_s\\\": 0.1}' > $COLO_PROGRESS_FILE; sleep 11\"\n");
  auto run = run_colo(dir, "run " + dir.file("jobs.toml") + " --poll 0.1 --summary-json " + dir.file("sum.json"),
                      "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(summary_of(dir)["pauses"], 1) << run.out;
  EXPECT_NEAR(summary_of(dir)["paused_job_s"].get<double>(), 4.0, 0.6) << "1 s of drain and the 3 s window";
  EXPECT_NE(run.out.find("1 pause(s)"), std::string::npos) << run.out;
  std::string shorter = read_file(dir.file("jobs.toml"));
  for (size_t at; (at = shorter.find("sleep 11")) != std::string::npos;) shorter.replace(at, 8, "sleep 6");
  dir.write("shorter.toml", shorter);
  auto beside = run_colo(dir, "run " + dir.file("shorter.toml") + " --store " + dir.file("beside.db") +
                                  " --poll 0.1 --no-probe-alone --summary-json " + dir.file("sum.json"),
                         "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(beside.status, 0) << beside.err;
  EXPECT_EQ(summary_of(dir)["pauses"], 0) << "--no-probe-alone pauses nothing";
}

// Job 1 (share declared) runs; job 2 (share unknown) reports progress at
// once, so 4 s later colo pauses job 1 to measure job 2 alone. Colo is
// killed with job 1 stopped: its watchdog lets job 1 run on.
TEST(ColoRun, KillNineOfColoWhileAJobIsPausedLeavesItRunning) {
  TempDir dir;
  dir.write("jobs.toml", "[[job]]\nname = \"known\"\nmem = \"10GiB\"\nsm_share = 0.3\n"
                         "command = \"echo $$ > " + dir.file("known.pid") + "; exec sleep 60\"\n"
                         "[[job]]\nname = \"new\"\nmem = \"10GiB\"\n"
                         "command = \"echo $$ > " + dir.file("new.pid") +
                         "; echo '{\\\"samples\\\": 1, \\\"train_s\\\": 0.1}' > $COLO_PROGRESS_FILE; exec sleep 60\"\n");
  ChildProcess colo({COLO_EXECUTABLE, "run", dir.file("jobs.toml"), "--store", dir.file("jobs.db"), "--poll", "0.1"},
                    {{"COLO_SIMULATED_GPUS", "1"}}, dir.file("colo.log"));
  ASSERT_TRUE(wait_for([&] { return path_exists(dir.file("known.pid")) && path_exists(dir.file("new.pid")); }, 30))
      << read_file(dir.file("colo.log"));
  std::string known = read_file(dir.file("known.pid"));
  known.erase(known.find_last_not_of("\n") + 1);
  std::string fresh = read_file(dir.file("new.pid"));
  fresh.erase(fresh.find_last_not_of("\n") + 1);
  struct KillJobs {
    std::vector<std::string> pids;
    ~KillJobs() {
      for (const auto& pid : pids) ::kill(-std::stoi(pid), SIGKILL);
    }
  } cleanup{{known, fresh}};
  ASSERT_TRUE(wait_for([&] { return process_state(known) == 'T'; }, 20))
      << "job 1 was never paused:\n" << read_file(dir.file("colo.log"));
  EXPECT_NE(read_file(dir.file("colo.log")).find("job(s) 1 paused for 4.0 s"), std::string::npos)
      << read_file(dir.file("colo.log"));
  EXPECT_NE(process_state(fresh), 'T') << "the job measured alone runs";
  ::kill(colo.pid(), SIGKILL);
  colo.wait();
  EXPECT_TRUE(wait_for([&] { return process_state(known) != 'T'; }, 5)) << "kill -9 of colo left job 1 stopped";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const char state = process_state(known);
  EXPECT_TRUE(state == 'S' || state == 'R') << "job 1 runs on (state " << state << ")";
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

TEST(ColoReplay, SubmitsJobsAtTheirOffsetsAndRunsThemAll) {
  testing::TempDir dir;
  dir.write("trace.csv", std::string(
      "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,command\n"
      "0,a,1,1,0.2,1073741824,0,date +%s.%N > ") + dir.file("a") + "\n"
      "1.0,b,1,1,0.2,1073741824,0,date +%s.%N > " + dir.file("b") + "\n");
  auto run = testing::run_colo(dir, "replay " + dir.file("trace.csv") + " --policy magm --poll 0.05 --summary-json " +
                                        dir.file("sum.json") + " --out " + dir.file("report"),
                               "COLO_SIMULATED_GPUS=1");
  ASSERT_EQ(run.status, 0) << run.err;
  auto summary = nlohmann::json::parse(read_file(dir.file("sum.json")));
  EXPECT_EQ(summary["completed"], 2);
  EXPECT_EQ(summary["jobs_lost"], 0);
  double a = std::stod(read_file(dir.file("a"))), b = std::stod(read_file(dir.file("b")));
  EXPECT_GE(b - a, 0.9) << "b was submitted a second after a";

  // --out: what `colo report` reads, with times from the replay's start.
  auto runs = nlohmann::json::parse(read_file(dir.file("report/summary.json")));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["policy"], "magm");
  EXPECT_EQ(runs[0]["completed"], 2);
  auto jobs = read_json_lines(dir.file("report/jobs_magm_mps.jsonl"));
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[1]["name"], "b");
  EXPECT_EQ(jobs[1]["state"], "COMPLETED");
  EXPECT_EQ(jobs[1]["gpu"], 0);
  double b_submit = jobs[1]["submit_s"], b_start = jobs[1]["start_s"], b_end = jobs[1]["end_s"];
  EXPECT_NEAR(b_submit, 1.0, 0.5);
  EXPECT_LE(b_submit, b_start);
  EXPECT_LT(b_start, b_end);
  EXPECT_LT(b_end, summary["total_s"].get<double>() + 0.5);
}

TEST(ColoReplay, TraceJobWithoutACommandIsRejected) {
  testing::TempDir dir;
  dir.write("trace.csv", "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,command\n0,a,1,1,0.2,,0,\n");
  auto run = testing::run_colo(dir, "replay " + dir.file("trace.csv"));
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("has no command"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

TEST(ColoSimulate, ComparesPoliciesAndReportsWithPlots) {
  testing::TempDir dir;
  auto gen = testing::run_colo(dir, "trace generate --jobs 200 --seed 2 --out " + dir.file("t.csv"));
  ASSERT_EQ(gen.status, 0) << gen.err;
  auto sim = testing::run_colo(dir, "simulate " + dir.file("t.csv") + " --gpus 4 --policy all --out " + dir.file("out"));
  ASSERT_EQ(sim.status, 0) << sim.err;
  auto runs = nlohmann::json::parse(read_file(dir.file("out/summary.json")));
  ASSERT_EQ(runs.size(), 6u);  // exclusive, round-robin, magm, lug, best-fit, slurm-shard
  EXPECT_EQ(runs[0]["policy"], "exclusive");
  EXPECT_EQ(runs[5]["policy"], "slurm-shard");
  for (const auto& r : runs) EXPECT_EQ(r["jobs_lost"], 0) << r["policy"];
  EXPECT_LT(runs[2]["total_s"].get<double>(), runs[0]["total_s"].get<double>()) << "magm beats exclusive";
  auto report = testing::run_colo(dir, "report " + dir.file("out"));
  ASSERT_EQ(report.status, 0) << report.err;
  std::string png = read_file(dir.file("out/gantt_magm_mps.png"));
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_TRUE(path_exists(dir.file("out/policies.png")));
}

TEST(ColoSimulate, AJobWiderThanTheSimulationIsRefusedBeforeAnythingIsWritten) {
  testing::TempDir dir;
  dir.write("t.csv", "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,gpus,command\n"
                     "0,wide,10,1000,0.5,,0,5,\n");
  auto sim = testing::run_colo(dir, "simulate " + dir.file("t.csv") + " --gpus 2 --out " + dir.file("out"));
  EXPECT_EQ(sim.status, 2);
  EXPECT_NE(sim.err.find("t.csv: gpus: at most 2 GPUs per job"), std::string::npos) << sim.err;
  EXPECT_NE(sim.err.find("job wide asks for 5"), std::string::npos) << sim.err;
  EXPECT_EQ(sim.out, "") << "a table header for a simulation that never ran";
  EXPECT_FALSE(path_exists(dir.file("out")));
}

TEST(ColoSimulate, UnknownPolicyIsABadInput) {
  testing::TempDir dir;
  testing::run_colo(dir, "trace generate --jobs 5 --out " + dir.file("t.csv"));
  auto sim = testing::run_colo(dir, "simulate " + dir.file("t.csv") + " --policy fastest");
  EXPECT_EQ(sim.status, 2);
  EXPECT_NE(sim.err.find("unknown policy"), std::string::npos) << sim.err;
}

}  // namespace
}  // namespace colo

namespace colo {
namespace {

std::string state_of(const testing::TempDir& dir, int id) {
  auto show = testing::run_colo(dir, "show --store " + dir.file("s.db") + " " + std::to_string(id));
  if (show.status != 0) return "?";
  return nlohmann::json::parse(show.out)["state"].get<std::string>();
}

bool wait_for_state(const testing::TempDir& dir, int id, const std::string& state, double timeout_s) {
  Stopwatch clock;
  while (clock.elapsed_s() < timeout_s) {
    if (state_of(dir, id) == state) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

TEST(ColoServe, SubmitShowLogsAndCancelAgainstARunningScheduler) {
  testing::TempDir dir;
  ChildProcess server({COLO_EXECUTABLE, "run", "--store", dir.file("s.db"), "--serve", "--poll", "0.1"},
                      {{"COLO_SIMULATED_GPUS", "1"}}, dir.file("server.log"));
  // A failed check or a throw below must not leave the scheduler running.
  struct StopsServer {
    ChildProcess& server;
    ~StopsServer() {
      if (!server.poll()) server.terminate(2);
    }
  } stops_server{server};
  auto slow = testing::run_colo(dir, "submit --store " + dir.file("s.db") + " --mem 1GiB --name slow -- sh -c 'echo $$ > " +
                                         dir.file("slow.pid") + "; sleep 60'");
  ASSERT_EQ(slow.status, 0) << slow.err;
  EXPECT_EQ(slow.out, "1\n");
  auto quick = testing::run_colo(dir, "submit --store " + dir.file("s.db") + " --mem 1GiB -- echo quick-output");
  EXPECT_EQ(quick.out, "2\n");
  EXPECT_TRUE(wait_for_state(dir, 2, "COMPLETED", 30)) << read_file(dir.file("server.log"));
  EXPECT_EQ(testing::run_colo(dir, "logs --store " + dir.file("s.db") + " 2").out, "quick-output\n");
  ASSERT_TRUE(wait_for_state(dir, 1, "RUNNING", 30)) << read_file(dir.file("server.log"));
  auto cancel = testing::run_colo(dir, "cancel --store " + dir.file("s.db") + " 1");
  EXPECT_EQ(cancel.out, "1: RUNNING -> CANCELLED\n");
  int pid = std::stoi(read_file(dir.file("slow.pid")));
  Stopwatch clock;
  while (process_alive(pid) && clock.elapsed_s() < 10) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(process_alive(pid)) << "the cancelled job was stopped";
  EXPECT_EQ(state_of(dir, 1), "CANCELLED");
  ::kill(server.pid(), SIGINT);
  server.wait();
}

TEST(ColoSubmit, AJobIsNamedAfterTheScriptItsInterpreterRuns) {
  TempDir dir;
  const std::string store = dir.file("jobs.db");
  const std::pair<const char*, const char*> cases[] = {
      {"python3 train.py --lr 0.1", "train"},
      {"bash run.sh", "run"},
      {"/usr/bin/env python3 x.py", "x"},
      {"env SEED=3 python3 -m pkg.fit", "pkg.fit"},
      {"srun -n 4 torchrun --nproc_per_node 2 ddp.py", "ddp"},
      {"true", "true"},
      {"--name mine -- python3 train.py", "mine"},
  };
  for (const auto& [command, name] : cases) {
    const std::string args = std::string(command).rfind("--name", 0) == 0 ? command : std::string("-- ") + command;
    auto submit = run_colo(dir, "submit --store " + store + " " + args);
    ASSERT_EQ(submit.status, 0) << command << ": " << submit.err;
    auto show = run_colo(dir, "show --store " + store + " " + submit.out.substr(0, submit.out.find('\n')));
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_EQ(nlohmann::json::parse(show.out)["spec"]["name"], name) << command;
  }
}

TEST(ColoSubmit, TheModelsAutocastIsStoredAndAnUnknownOneRefused) {
  TempDir dir;
  const std::string submit = "submit --store " + dir.file("jobs.db") + " --model m:f --input 3x32x32 ";
  auto bad = run_colo(dir, submit + "--autocast fp8 -- true");
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("--autocast"), std::string::npos) << bad.err;
  auto run = run_colo(dir, submit + "--autocast bf16 -- true");
  ASSERT_EQ(run.status, 0) << run.err;
  auto shown = run_colo(dir, "show --store " + dir.file("jobs.db") + " 1");
  ASSERT_EQ(shown.status, 0) << shown.err;
  auto model = nlohmann::json::parse(shown.out)["spec"]["model"];
  EXPECT_EQ(model["autocast"], "bf16") << shown.out;
  EXPECT_EQ(model["builder"], "m:f");
}

TEST(ColoSubmit, BadInputIsRejected) {
  testing::TempDir dir;
  EXPECT_EQ(testing::run_colo(dir, "submit --store " + dir.file("s.db") + " --mem lots -- true").status, 2);
  EXPECT_EQ(testing::run_colo(dir, "submit --store " + dir.file("s.db")).status, 2);
  EXPECT_EQ(testing::run_colo(dir, "show --store " + dir.file("s.db") + " 99").status, 2);
  EXPECT_EQ(testing::run_colo(dir, "cancel --store " + dir.file("s.db") + " abc").status, 2);
}

}  // namespace
}  // namespace colo
