#include "colo/sched/store.h"

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "colo/core/error.h"
#include "support/temp_dir.h"

namespace colo::sched {
namespace {

JobSpec spec(const std::string& name) {
  JobSpec s;
  s.name = name;
  s.command = {"true"};
  return s;
}

TEST(JobStore, SubmittedJobsArePendingAndSurviveReopening) {
  testing::TempDir dir;
  {
    JobStore store(dir.file("jobs.db"));
    JobSpec array = spec("a");
    array.array = std::make_pair(0, 2);
    auto ids = store.submit({array, spec("b")});
    EXPECT_EQ(ids.size(), 4u);
  }
  JobStore reopened(dir.file("jobs.db"));
  auto jobs = reopened.list();
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs[2].spec.name, "a[2]");
  EXPECT_EQ(jobs[3].state, JobState::kPending);
}

TEST(JobStore, ProcessesThatOpenANewStoreAtOnceAllGetIt) {
  // A daemon starting while a job is submitted: each opening switches the
  // file to WAL and makes the schema; none may fail with "locked".
  for (int round = 0; round < 20; ++round) {
    testing::TempDir dir;
    const std::string path = dir.file("jobs.db");
    std::vector<std::thread> openers;
    std::atomic<int> opened{0};
    std::mutex failures_mutex;
    std::string failures;
    for (int i = 0; i < 6; ++i) {
      openers.emplace_back([&] {
        try {
          JobStore store(path);
          store.submit({spec("a")});
          ++opened;
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(failures_mutex);
          failures += std::string(e.what()) + "\n";
        }
      });
    }
    for (auto& t : openers) t.join();
    ASSERT_EQ(opened.load(), 6) << "round " << round << ": " << failures;
    EXPECT_EQ(JobStore(path).list().size(), 6u);
  }
}

TEST(JobStore, TransitionsFollowTheStateMachine) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  int64_t id = store.submit({spec("a")})[0];
  EXPECT_TRUE(store.mark_running(id, {0}, 1234, "/log"));
  EXPECT_FALSE(store.mark_running(id, {0}, 1234, "/log")) << "a running job cannot start again";
  store.mark_finished(id, JobState::kOutOfMemory, 1, "oom", int64_t{5} << 30, 10.0);
  auto job = store.get(id);
  EXPECT_EQ(job->state, JobState::kOutOfMemory);
  EXPECT_EQ(job->oom_deaths, 1);
  EXPECT_EQ(job->peak_mem_bytes, int64_t{5} << 30);
  EXPECT_TRUE(store.mark_running(id, {1}, 99, "/log")) << "an OOM death is retried";
  store.mark_finished(id, JobState::kCompleted, 0, "", std::nullopt, 5.0);
  job = store.get(id);
  EXPECT_EQ(job->state, JobState::kCompleted);
  EXPECT_EQ(job->attempts, 2);
  EXPECT_EQ(job->peak_mem_bytes, int64_t{5} << 30) << "the largest peak is kept";
  EXPECT_DOUBLE_EQ(job->energy_j, 15.0);
}

TEST(JobStore, KeepsEveryRunOfAJobWithHowItEnded) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  int64_t id = store.submit({spec("a"), spec("b")})[0];
  EXPECT_TRUE(store.runs(id).empty()) << "not started yet";
  ASSERT_TRUE(store.mark_running(id, {0}, 1, "/log"));
  store.mark_requeued(id, "its process was lost");
  ASSERT_TRUE(store.mark_running(id, {0}, 2, "/log"));
  store.mark_finished(id, JobState::kOutOfMemory, 1, "oom", std::nullopt, 0);
  ASSERT_TRUE(store.mark_running(id, {1}, 3, "/log"));
  auto runs = store.runs(id);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].state, JobState::kRequeued);
  EXPECT_EQ(runs[1].state, JobState::kOutOfMemory);
  EXPECT_EQ(runs[2].state, JobState::kRunning);
  EXPECT_FALSE(runs[2].end_s) << "the last one still runs";
  for (size_t i = 0; i + 1 < runs.size(); ++i) {
    ASSERT_TRUE(runs[i].end_s);
    EXPECT_LE(runs[i].start_s, *runs[i].end_s);
    EXPECT_LE(*runs[i].end_s, runs[i + 1].start_s);
  }
  EXPECT_DOUBLE_EQ(runs[2].start_s, store.get(id)->start_s.value_or(0)) << "the record's start is the last run's";
  store.mark_finished(id, JobState::kCompleted, 0, "", std::nullopt, 0);
  store.correct_end_time(id, runs[2].start_s);
  EXPECT_EQ(store.runs(id)[2].state, JobState::kCompleted);
  EXPECT_DOUBLE_EQ(store.runs(id)[2].end_s.value_or(-1), runs[2].start_s) << "a corrected end corrects the run";

  int64_t cancelled = id + 1;
  ASSERT_TRUE(store.mark_running(cancelled, {0}, 4, "/log"));
  store.cancel(cancelled);
  ASSERT_EQ(store.runs(cancelled).size(), 1u);
  EXPECT_EQ(store.runs(cancelled)[0].state, JobState::kCancelled);
  EXPECT_TRUE(store.runs(cancelled)[0].end_s);
}

TEST(JobStore, KeepsWaitingReasonsGpusOfAMultiGpuJobAndMeasuredShares) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  int64_t id = store.submit({spec("a")})[0];
  store.set_waiting_reason(id, "GPU 0: memory");
  EXPECT_EQ(store.get(id)->reason, "GPU 0: memory");
  EXPECT_TRUE(store.mark_running(id, {1, 3}, 7, "/log"));
  store.set_waiting_reason(id, "late");
  auto job = store.get(id);
  EXPECT_EQ(job->reason, "") << "starting clears the reason; a running job takes none";
  EXPECT_EQ(job->gpus, (std::vector<int>{1, 3}));
  EXPECT_EQ(job->gpu, 1);
  store.record_sm_share(id, 0.25);
  EXPECT_DOUBLE_EQ(JobStore(dir.file("jobs.db")).get(id)->sm_share.value_or(0), 0.25);
  store.count_false_oom(id);
  EXPECT_EQ(store.get(id)->false_ooms, 1);
}

TEST(JobStore, AStoreFromBeforeTheNewColumnsOpensAndKeepsItsJobs) {
  testing::TempDir dir;
  std::string path = dir.file("old.db");
  // Through SQLite's C API, not the sqlite3 program (the GPU machine has none).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
               "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, spec TEXT NOT NULL, state TEXT NOT NULL, "
               "priority INTEGER NOT NULL DEFAULT 0, submit_s REAL NOT NULL, start_s REAL, end_s REAL, gpu INTEGER "
               "NOT NULL DEFAULT -1, pid INTEGER NOT NULL DEFAULT 0, exit_code INTEGER, reason TEXT NOT NULL DEFAULT "
               "'', attempts INTEGER NOT NULL DEFAULT 0, oom_deaths INTEGER NOT NULL DEFAULT 0, peak_mem_bytes "
               "INTEGER, energy_j REAL NOT NULL DEFAULT 0, log_path TEXT NOT NULL DEFAULT '');"
               "INSERT INTO jobs (spec, state, submit_s, gpu) VALUES ('{\"name\":\"old\",\"command\":[\"true\"]}', "
               "'COMPLETED', 1, 2);",
               nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  JobStore store(path);
  auto jobs = store.list();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].spec.name, "old");
  EXPECT_EQ(jobs[0].gpus, (std::vector<int>{2}));
  EXPECT_FALSE(jobs[0].sm_share.has_value());
}

TEST(JobStore, KeepsTheDataWaitAJobReported) {
  testing::TempDir dir;
  int64_t id = 0;
  {
    JobStore store(dir.file("jobs.db"));
    id = store.submit({spec("a"), spec("b")})[0];
    store.record_data_wait(id, 12.5);
  }
  JobStore reopened(dir.file("jobs.db"));
  auto a = reopened.get(id);
  ASSERT_TRUE(a && a->data_wait_pct);
  EXPECT_DOUBLE_EQ(*a->data_wait_pct, 12.5);
  EXPECT_DOUBLE_EQ(to_json(*a)["data_wait_pct"].get<double>(), 12.5);
  EXPECT_FALSE(reopened.get(id + 1)->data_wait_pct) << "b reported none";
}

TEST(JobStore, KeepsEnergyAsItIsCountedWithTheGpuReadingsItWasCountedUpTo) {
  testing::TempDir dir;
  int64_t id = 0;
  {
    JobStore store(dir.file("jobs.db"));
    id = store.submit({spec("a")})[0];
    ASSERT_TRUE(store.mark_running(id, {1}, 1, dir.file("a.log")));
    store.add_energy({{id, 100}}, {{1, "GPU-x", 5000, 10}});
    store.add_energy({{id, 40}}, {{1, "GPU-x", 5040, 11}, {0, "GPU-y", 7, 11}}, /*while_down=*/true);
    store.mark_finished(id, JobState::kCompleted, 0, "", std::nullopt, 2);
  }
  JobStore reopened(dir.file("jobs.db"));
  auto a = reopened.get(id);
  EXPECT_DOUBLE_EQ(a->energy_j, 142);
  EXPECT_DOUBLE_EQ(a->energy_while_down_j, 40);
  EXPECT_DOUBLE_EQ(to_json(*a)["energy_while_down_j"].get<double>(), 40);
  auto readings = reopened.gpu_energy_readings();
  ASSERT_EQ(readings.size(), 2u) << "one, the latest, per GPU";
  EXPECT_EQ(readings[0].uuid, "GPU-y");
  EXPECT_EQ(readings[1].gpu, 1);
  EXPECT_DOUBLE_EQ(readings[1].counter_j, 5040);
  EXPECT_DOUBLE_EQ(readings[1].unix_s, 11);
}

TEST(JobStore, CancelledJobsCannotStart) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  int64_t id = store.submit({spec("a")})[0];
  EXPECT_EQ(store.cancel(id), JobState::kPending);
  EXPECT_FALSE(store.mark_running(id, {0}, 1, ""));
  EXPECT_EQ(store.get(id)->state, JobState::kCancelled);
}

TEST(JobStore, AFileThatIsNotAStoreIsRejected) {
  testing::TempDir dir;
  EXPECT_THROW(JobStore(dir.write("junk.db", std::string(5000, 'x'))), InputError);
}

}  // namespace
}  // namespace colo::sched
