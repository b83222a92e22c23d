// `colo compare` as a user runs it, on a machine without a GPU.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/colo_process.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/subprocess.h"

namespace colo {
namespace {

using testing::run_colo;
using testing::TempDir;

nlohmann::json level(const nlohmann::json& summary, const std::string& name) {
  for (const auto& l : summary["levels"]) {
    if (l["level"] == name) return l;
  }
  ADD_FAILURE() << "no level " << name << " in " << summary.dump();
  return {};
}

// The level with the highest median samples/s, by the summary's own numbers.
std::string fastest(const nlohmann::json& summary) {
  std::string best;
  double top = -1;
  for (const auto& l : summary["levels"]) {
    if (l.contains("samples_per_s") && l["samples_per_s"].get<double>() > top) {
      top = l["samples_per_s"].get<double>();
      best = l["level"].get<std::string>();
    }
  }
  return best;
}

TEST(ColoCompare, SweepRunsAtEveryLevelThatAppliesAndCountsWhatWasTrained) {
  TempDir dir;
  dir.write("s.toml",
            "device = \"cpu\"\noutput = \"" + dir.file("unused") + "\"\nepochs = 1\nbatch_size = 32\n"
            "[model]\nname = \"mlp\"\nwidths = [16]\n"
            "[data]\nname = \"synthetic\"\nshape = [1, 6, 6]\nclasses = 4\ntrain_size = 256\ntest_size = 64\n"
            "[optimizer]\nname = \"sgd\"\nlr = 0.05\n[sweep]\n[sweep.axes]\nlr = [0.01, 0.1]\n");
  auto run = run_colo(dir, "compare --repeat 1 " + dir.file("s.toml") + " --steps 5 --warmup 1 --no-plots --out " +
                               dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  auto summary = nlohmann::json::parse(read_file(dir.file("out/summary.json")));
  EXPECT_EQ(summary["kind"], "sweep");
  EXPECT_EQ(summary["jobs"], 2);
  EXPECT_EQ(summary["warmup_rounds"], 1);
  // Two models of 5 steps of 32 samples, however they were run.
  for (const char* name : {"sequential", "timeslice", "fused"}) {
    nlohmann::json l = level(summary, name);
    ASSERT_EQ(l["runs"].size(), 1u) << l.dump();
    ASSERT_EQ(l["warmup_runs"].size(), 1u) << "the warm-up round is kept apart: " << l.dump();
    EXPECT_EQ(l["warmup_runs"][0]["samples"], 320) << name;
    EXPECT_TRUE(l["runs"][0]["ok"].get<bool>()) << l.dump();
    EXPECT_EQ(l["runs"][0]["samples"], 320) << name;
    // Five steps are over before a second progress write: timed by the wall.
    EXPECT_EQ(summary["basis"], "wall");
    double wall = l["runs"][0]["wall_s"].get<double>();
    EXPECT_NEAR(l["samples_per_s"].get<double>(), 320 / wall, 1e-6 * 320 / wall) << name;
  }
  EXPECT_NE(level(summary, "mps")["skipped"].get<std::string>().find("no GPU"), std::string::npos);
  EXPECT_NE(level(summary, "scheduler")["skipped"].get<std::string>().find("no GPU"), std::string::npos);
  EXPECT_NE(level(summary, "slots")["skipped"].get<std::string>().find("same as timeslice"), std::string::npos);
  EXPECT_EQ(summary["recommended_for_throughput"]["best"], fastest(summary));
  EXPECT_TRUE(summary["recommended_for_energy"]["best"].is_null()) << "no GPU, no energy counter";
  EXPECT_NE(run.out.find("skipped: no GPU"), std::string::npos) << run.out;
  nlohmann::json rec = summary["recommended_for_throughput"];
  EXPECT_EQ(rec["recommended"].is_null(), rec["within_noise"].get<bool>()) << rec.dump();
  std::string printed = rec["within_noise"].get<bool>() ? "none; " + fastest(summary) + " leads" : fastest(summary);
  EXPECT_NE(run.out.find("recommended for throughput: " + printed), std::string::npos) << run.out;
}

TEST(ColoCompare, JobFileLevelsRunAndAFailingLevelNeverStopsTheOthers) {
  TempDir dir;
  dir.write("jobs.toml",
            "[[job]]\nname = \"a\"\ncommand = \"sleep 0.3\"\nsamples = 300\n"
            "[[job]]\nname = \"b\"\ncommand = \"sleep 0.3\"\nsamples = 300\n"
            "[[job]]\nname = \"c\"\ncommand = \"sleep 0.3\"\nsamples = 300\n"
            "[fused]\ncommand = \"exit 3\"\nsamples = 900\n");
  auto run = run_colo(dir, "compare " + dir.file("jobs.toml") +
                               " --levels sequential,timeslice,slots,fused,streams --slots 2 --repeat 2 --no-plots"
                               " --out " + dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  auto summary = nlohmann::json::parse(read_file(dir.file("out/summary.json")));
  ASSERT_EQ(summary["levels"].size(), 5u);
  nlohmann::json fused = level(summary, "fused");
  EXPECT_NE(fused["failure"].get<std::string>().find("exited with 3"), std::string::npos) << fused.dump();
  EXPECT_FALSE(fused.contains("samples_per_s"));
  EXPECT_NE(level(summary, "streams")["skipped"].get<std::string>().find("[streams]"), std::string::npos);
  nlohmann::json seq = level(summary, "sequential"), all = level(summary, "timeslice"), slots = level(summary, "slots");
  for (const auto& l : {seq, all, slots}) {
    ASSERT_EQ(l["runs"].size(), 2u) << l.dump();
    EXPECT_LE(l["samples_per_s_min"].get<double>(), l["samples_per_s"].get<double>());
    EXPECT_LE(l["samples_per_s"].get<double>(), l["samples_per_s_max"].get<double>());
  }
  // Three 0.3 s jobs: about 0.9 s one at a time, 0.6 s two at a time, 0.3 s all at once.
  EXPECT_GT(all["samples_per_s"].get<double>(), 1.5 * seq["samples_per_s"].get<double>());
  EXPECT_GT(slots["samples_per_s"].get<double>(), 1.2 * seq["samples_per_s"].get<double>());
  nlohmann::json rec = summary["recommended_for_throughput"];
  EXPECT_EQ(rec["best"], fastest(summary));
  // Within noise exactly when the runner-up's best round reaches the best level's worst.
  nlohmann::json best = level(summary, rec["best"]), next = level(summary, rec["runner_up"]);
  EXPECT_EQ(rec["within_noise"].get<bool>(),
            next["samples_per_s_max"].get<double>() >= best["samples_per_s_min"].get<double>());
  EXPECT_EQ(rec["recommended"].is_null(), rec["within_noise"].get<bool>()) << "recommended only when told apart";
}

// A workload's [[job]] running `script` with its start-up, rate and training
// seconds, which trains rate * train_s samples.
std::string job_entry(const std::string& name, const std::string& script, double startup_s, double rate,
                      double train_s) {
  return "[[job]]\nname = \"" + name + "\"\ncommand = \"python3 " + script + " " + std::to_string(startup_s) + " " +
         std::to_string(rate) + " " + std::to_string(train_s) + "\"\nsamples = " +
         std::to_string(static_cast<int64_t>(rate * train_s)) + "\n";
}

// A job that sleeps `startup_s`, then "trains" `rate` samples/s for
// `train_s`, reporting through $COLO_PROGRESS_FILE as colo.report_progress
// does (the documented format, written atomically).
std::string reporting_job(const TempDir& dir, const std::string& name, double startup_s, double rate,
                          double train_s) {
  std::string script = dir.write("reporting_job.py",
                                 "import json, os, sys, time\n"
                                 "startup, rate, length = (float(a) for a in sys.argv[1:])\n"
                                 "time.sleep(startup)\n"
                                 "path, start = os.environ['COLO_PROGRESS_FILE'], time.time()\n"
                                 "interval = float(os.environ['COLO_PROGRESS_INTERVAL_S'])\n"
                                 "while True:\n"
                                 "    now = min(time.time(), start + length)\n"
                                 "    with open(path + '.tmp', 'w') as f:\n"
                                 "        json.dump({'samples': int((now - start) * rate), 'train_s': now - start,"
                                 " 'at': now}, f)\n"
                                 "    os.replace(path + '.tmp', path)\n"
                                 "    if now >= start + length:\n"
                                 "        break\n"
                                 "    time.sleep(interval)\n");
  return job_entry(name, script, startup_s, rate, train_s);
}

TEST(ColoCompare, JobsThatReportProgressAreTimedWithoutTheirStartUp) {
  TempDir dir;
  // Two jobs: 1 s of start-up, then 1.5 s at 2,000 samples/s each.
  dir.write("jobs.toml", reporting_job(dir, "a", 1.0, 2000, 1.5) + reporting_job(dir, "b", 1.0, 2000, 1.5));
  auto run = run_colo(dir, "compare --repeat 1 " + dir.file("jobs.toml") + " --levels sequential,timeslice --no-plots --out " +
                               dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  auto summary = nlohmann::json::parse(read_file(dir.file("out/summary.json")));
  EXPECT_EQ(summary["basis"], "training") << summary.dump();
  nlohmann::json seq = level(summary, "sequential")["runs"][0], all = level(summary, "timeslice")["runs"][0];
  // Training time only: one job's rate one at a time, two jobs' at once.
  EXPECT_NEAR(seq["samples_per_s"].get<double>(), 2000, 200) << seq.dump();
  EXPECT_NEAR(all["samples_per_s"].get<double>(), 4000, 400) << all.dump();
  // The wall figures pay the start-up: 6,000 samples in about 5 s and 2.5 s.
  EXPECT_LT(seq["wall_samples_per_s"].get<double>(), 1400) << seq.dump();
  EXPECT_LT(all["wall_samples_per_s"].get<double>(), 2700) << all.dump();
  EXPECT_NE(run.out.find("start-up and warm-up left out"), std::string::npos) << run.out;

  // With a job that does not report, every level falls back to wall time.
  dir.write("mixed.toml", reporting_job(dir, "a", 0.2, 2000, 1.0) +
                              "[[job]]\nname = \"quiet\"\ncommand = \"sleep 1\"\nsamples = 1000\n");
  auto mixed = run_colo(dir, "compare --repeat 1 " + dir.file("mixed.toml") + " --levels sequential,timeslice --no-plots --out " +
                                 dir.file("out2"));
  ASSERT_EQ(mixed.status, 0) << mixed.err;
  auto mixed_summary = nlohmann::json::parse(read_file(dir.file("out2/summary.json")));
  EXPECT_EQ(mixed_summary["basis"], "wall");
  nlohmann::json wall = level(mixed_summary, "timeslice")["runs"][0];
  EXPECT_DOUBLE_EQ(wall["samples_per_s"].get<double>(), wall["wall_samples_per_s"].get<double>());
}

// A job that starts up for `startup_s`, then trains `rate` samples/s for
// `train_s`, reporting through colo.report_progress (the package's own
// module, loaded by its path: it needs no torch).
std::string package_reporting_job(const TempDir& dir, const std::string& name, double startup_s, double rate,
                                  double train_s) {
  std::string script = dir.write(
      "package_reporting_job.py",
      "import importlib.util, sys, time\n"
      "spec = importlib.util.spec_from_file_location('progress', '" COLO_SOURCE_DIR "/python/colo/progress.py')\n"
      "progress = importlib.util.module_from_spec(spec)\n"
      "spec.loader.exec_module(progress)\n"
      "startup, rate, length = (float(a) for a in sys.argv[1:])\n"
      "time.sleep(startup)\n"
      "progress.report_progress(samples=0)\n"
      "start = time.monotonic()\n"
      "while True:\n"
      "    now = min(time.monotonic(), start + length)\n"
      "    progress.report_progress(samples=int((now - start) * rate))\n"
      "    if now >= start + length:\n"
      "        break\n"
      "    time.sleep(0.05)\n"
      "progress.flush()\n");
  return job_entry(name, script, startup_s, rate, train_s);
}

TEST(ColoCompare, ProcessesStartedAllAtOnceTrainTogetherThoughTheirStartUpsDiffer) {
  TempDir dir;
  // Start-ups of 0.1 and 2 s, then 1.5 s of training each: left to itself
  // the quick job would be done before the slow one began.
  dir.write("jobs.toml", package_reporting_job(dir, "quick", 0.1, 2000, 1.5) +
                             package_reporting_job(dir, "slow", 2.0, 2000, 1.5));
  auto run = run_colo(dir, "compare --repeat 1 " + dir.file("jobs.toml") + " --levels timeslice --no-plots --out " +
                               dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  nlohmann::json all = level(nlohmann::json::parse(read_file(dir.file("out/summary.json"))), "timeslice")["runs"][0];
  EXPECT_EQ(all["train_window"], "full_occupancy") << all.dump();
  EXPECT_EQ(all["train_occupancy"], 2) << all.dump();
  EXPECT_NEAR(all["samples_per_s"].get<double>(), 4000, 600) << all.dump();
  // The quick job waited for the slow one's 1.9 s longer start-up.
  EXPECT_NEAR(all["start_spread_s"].get<double>(), 1.9, 0.7) << all.dump();
}

TEST(ColoCompare, ALevelPastItsTimeLimitIsMeasuredFromProgressSoFar) {
  TempDir dir;
  dir.write("jobs.toml", reporting_job(dir, "a", 0.2, 1000, 30) + reporting_job(dir, "b", 0.2, 1000, 30) +
                             "[[job]]\nname = \"quiet\"\ncommand = \"sleep 30\"\nsamples = 1000\n");
  dir.write("reporting.toml", reporting_job(dir, "a", 0.2, 1000, 30) + reporting_job(dir, "b", 0.2, 1000, 30));
  auto run = run_colo(dir, "compare --repeat 1 " + dir.file("reporting.toml") +
                               " --levels timeslice --level-timeout 2 --no-plots --out " + dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  nlohmann::json l = level(nlohmann::json::parse(read_file(dir.file("out/summary.json"))), "timeslice");
  nlohmann::json r = l["runs"][0];
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_TRUE(r["stopped_at_budget"].get<bool>());
  EXPECT_NEAR(r["samples_per_s"].get<double>(), 2000, 250) << r.dump();
  EXPECT_LT(r["samples"].get<int64_t>(), 5000) << "counted from progress, not the declared 60,000";
  EXPECT_LT(r["wall_s"].get<double>(), 10);
  EXPECT_NE(run.out.find("stopped at --level-timeout"), std::string::npos) << run.out;
  // A job that reports nothing cannot be measured before its end: failed, with why.
  auto quiet = run_colo(dir, "compare --repeat 1 " + dir.file("jobs.toml") + " --levels timeslice --level-timeout 2 --no-plots"
                                 " --out " + dir.file("out2"));
  nlohmann::json q = level(nlohmann::json::parse(read_file(dir.file("out2/summary.json"))), "timeslice");
  EXPECT_NE(q["failure"].get<std::string>().find("report no progress"), std::string::npos) << q.dump();
  EXPECT_EQ(quiet.status, 1) << "no level measured";
}

TEST(ColoCompare, ASuccessorCutInItsStartUpByTheBudgetLeavesTheLevelMeasured) {
  TempDir dir;
  // Sequential: a trains 1.5 s; b, started after it, is still starting (5 s)
  // when the 3 s budget ends.
  dir.write("jobs.toml", reporting_job(dir, "a", 0.2, 1000, 1.5) + reporting_job(dir, "b", 5, 1000, 30));
  auto run = run_colo(dir, "compare --repeat 1 " + dir.file("jobs.toml") +
                               " --levels sequential --level-timeout 3 --no-plots --out " + dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  nlohmann::json r = level(nlohmann::json::parse(read_file(dir.file("out/summary.json"))), "sequential")["runs"][0];
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_TRUE(r["stopped_at_budget"].get<bool>());
  EXPECT_NEAR(r["samples_per_s"].get<double>(), 1000, 150) << r.dump();
}

TEST(ColoCompare, JobsOfDifferentCostAreWeighedByTheirThroughputAlone) {
  TempDir dir;
  // A cheap job (2,000 samples/s) and a costly one (200 samples/s), neither
  // slowed by the other. One at a time they make 1x; at once, 2x.
  dir.write("jobs.toml", reporting_job(dir, "cheap", 0.2, 2000, 2) + reporting_job(dir, "costly", 0.2, 200, 2));
  auto run = run_colo(dir, "compare --repeat 1 " + dir.file("jobs.toml") +
                               " --levels sequential,timeslice --no-plots --out " + dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  auto summary = nlohmann::json::parse(read_file(dir.file("out/summary.json")));
  EXPECT_NEAR(level(summary, "sequential")["normalised_throughput"].get<double>(), 1.0, 0.1) << summary.dump();
  EXPECT_NEAR(level(summary, "timeslice")["normalised_throughput"].get<double>(), 2.0, 0.3) << summary.dump();
  EXPECT_EQ(summary["recommended_for_throughput"]["measure"], "normalised_throughput");
  EXPECT_EQ(summary["recommended_for_throughput"]["best"], "timeslice");
  EXPECT_NE(run.out.find("x alone"), std::string::npos) << run.out;
}

// A `colo train` spec on a small synthetic image set: `model` lines, 4 steps of 32.
std::string small_spec(const std::string& model, int64_t train_size) {
  return "device = \"cpu\"\nepochs = 1\nmax_steps = 4\nbatch_size = 32\ncheckpoint_every = 0\n"
         "[model]\n" + model + "\n"
         "[data]\nname = \"synthetic\"\nshape = [1, 28, 28]\nclasses = 4\ntrain_size = " + std::to_string(train_size) +
         "\ntest_size = 64\n[optimizer]\nname = \"sgd\"\nlr = 0.05\n";
}

TEST(ColoCompare, ColoTrainJobsAlsoRunSideBySideInOneProcessOnOneDataSetOrEachOnItsOwn) {
  TempDir dir;
  dir.write("mlp.toml", small_spec("name = \"mlp\"\nwidths = [16]", 256));
  dir.write("lenet.toml", small_spec("name = \"lenet\"", 256));
  dir.write("other.toml", small_spec("name = \"mlp\"\nwidths = [8]", 512));
  std::string colo = COLO_EXECUTABLE;
  dir.write("jobs.toml", "[[job]]\nname = \"mlp\"\ncommand = \"" + colo + " train " + dir.file("mlp.toml") +
                             " --out {out}\"\nsamples = 128\n[[job]]\nname = \"lenet\"\ncommand = \"" + colo +
                             " train " + dir.file("lenet.toml") + " --out {out}\"\nsamples = 128\n");
  auto run = run_colo(dir, "compare --repeat 1 " + dir.file("jobs.toml") + " --levels sequential,streams --no-plots --out " +
                               dir.file("out"));
  ASSERT_EQ(run.status, 0) << run.err << run.out;
  auto summary = nlohmann::json::parse(read_file(dir.file("out/summary.json")));
  nlohmann::json streams = level(summary, "streams");
  ASSERT_FALSE(streams.contains("skipped")) << streams.dump();
  ASSERT_TRUE(streams["runs"][0]["ok"].get<bool>()) << streams.dump();
  EXPECT_EQ(streams["runs"][0]["samples"], 256);
  // The one process trained both models, 4 steps each, into their own outputs.
  for (const char* out : {"out/round-1/streams/streams/0-mlp/metrics.jsonl",
                          "out/round-1/streams/streams/1-lenet/metrics.jsonl"}) {
    ASSERT_TRUE(path_exists(dir.file(out))) << out << "\n" << run.err;
    EXPECT_NE(read_file(dir.file(out)).find("\"step\":4"), std::string::npos) << read_file(dir.file(out));
  }
  // Specs on different data train in one process too, each over its own data.
  dir.write("mixed.toml", "[[job]]\nname = \"a\"\ncommand = \"" + colo + " train " + dir.file("mlp.toml") +
                              " --out {out}\"\nsamples = 128\n[[job]]\nname = \"b\"\ncommand = \"" + colo +
                              " train " + dir.file("other.toml") + " --out {out}\"\nsamples = 128\n");
  auto mixed = run_colo(dir, "compare --repeat 1 " + dir.file("mixed.toml") + " --levels streams --no-plots --out " +
                                 dir.file("out2"));
  ASSERT_EQ(mixed.status, 0) << mixed.err << mixed.out;
  nlohmann::json mixed_streams = level(nlohmann::json::parse(read_file(dir.file("out2/summary.json"))), "streams");
  ASSERT_FALSE(mixed_streams.contains("skipped")) << mixed_streams.dump();
  EXPECT_EQ(mixed_streams["runs"][0]["samples"], 256);
  for (const char* out : {"out2/round-1/streams/streams/0-mlp/metrics.jsonl",
                          "out2/round-1/streams/streams/1-mlp/metrics.jsonl"}) {
    ASSERT_TRUE(path_exists(dir.file(out))) << out << "\n" << mixed.err;
    EXPECT_NE(read_file(dir.file(out)).find("\"step\":4"), std::string::npos) << read_file(dir.file(out));
  }
  // colo train refuses specs for different devices, naming the field, before writing anything.
  std::string elsewhere = small_spec("name = \"mlp\"\nwidths = [8]", 256);
  elsewhere.replace(elsewhere.find("\"cpu\""), 5, "\"auto\"");
  dir.write("elsewhere.toml", elsewhere);
  auto refused = run_colo(dir, "train " + dir.file("mlp.toml") + " " + dir.file("elsewhere.toml") + " --out " +
                                   dir.file("out3"));
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("device"), std::string::npos) << refused.err;
  EXPECT_FALSE(path_exists(dir.file("out3")));
}

TEST(ColoCompare, ARerunIntoTheSameOutStartsEachLevelsLogsAndProgressAfresh) {
  TempDir dir;
  // The job says which run it is in; the first run's also reports progress.
  std::string job = dir.write("job.sh",
                              "echo \"run-$1\"\n"
                              "if [ -n \"${2:-}\" ]; then echo '{\"samples\": 5, \"train_s\": 0.1, \"at\": 1}'"
                              " > \"$COLO_PROGRESS_FILE\"; fi\n");
  // The scheduler level on a simulated GPU under the stand-in MPS control.
  const std::string compare = "compare " + dir.file("jobs.toml") + " --levels sequential,scheduler --no-plots"
                              " --mps-control " COLO_SOURCE_DIR "/tests/gpu/fake_mps_control.sh --out " +
                              dir.file("out");
  for (const char* run : {"first report", "second"}) {
    dir.write("jobs.toml", "[[job]]\nname = \"a\"\ncommand = \"sh " + job + " " + run + "\"\nsamples = 10\n");
    auto result = run_colo(dir, compare, "COLO_SIMULATED_GPUS=1");
    ASSERT_EQ(result.status, 0) << run << ": " << result.err << result.out;
  }
  EXPECT_EQ(read_file(dir.file("out/round-1/sequential/a.log")), "run-second\n");
  EXPECT_FALSE(path_exists(dir.file("out/round-1/sequential/a.progress"))) << "the first run's";
  const std::string logs = dir.file("out/round-1/scheduler/logs");
  std::vector<std::string> jobs;
  for (const std::string& name : list_directory(logs)) {
    if (name.rfind("job-", 0) == 0) jobs.push_back(name);
  }
  EXPECT_EQ(jobs, (std::vector<std::string>{"job-1.log", "job-1.status"})) << "the second run's job alone";
  EXPECT_EQ(read_file(logs + "/job-1.log"), "run-second\n");
  // Outside the levels' logs, nothing of the first run was removed.
  EXPECT_TRUE(is_directory(dir.file("out/round-1/sequential/a")));
}

TEST(ColoCompare, BadWorkloadsAreRejectedWithTheFieldNamed) {
  TempDir dir;
  dir.write("nosamples.toml", "[[job]]\nname = \"a\"\ncommand = \"true\"\n");
  auto missing_samples = run_colo(dir, "compare --repeat 1 " + dir.file("nosamples.toml") + " --out " + dir.file("o1"));
  EXPECT_EQ(missing_samples.status, 2);
  EXPECT_NE(missing_samples.err.find("job.samples"), std::string::npos) << missing_samples.err;
  auto no_file = run_colo(dir, "compare --repeat 1 " + dir.file("nope.toml") + " --out " + dir.file("o2"));
  EXPECT_EQ(no_file.status, 2);
  EXPECT_NE(no_file.err.find("nope.toml"), std::string::npos) << no_file.err;
  dir.write("ok.toml", "[[job]]\ncommand = \"true\"\nsamples = 1\n");
  auto bad_level = run_colo(dir, "compare --repeat 1 " + dir.file("ok.toml") + " --levels sequential,warp --out " + dir.file("o3"));
  EXPECT_EQ(bad_level.status, 2);
  EXPECT_NE(bad_level.err.find("unknown level \"warp\""), std::string::npos) << bad_level.err;
  EXPECT_FALSE(path_exists(dir.file("o1")) || path_exists(dir.file("o3"))) << "nothing written for bad input";
}

TEST(ColoCompare, CtrlCStopsTheLevelsRunningJobs) {
  TempDir dir;
  // Each job writes its pid, then trains (sleeps) far past the test.
  dir.write("jobs.toml",
            "[[job]]\nname = \"a\"\ncommand = \"sh -c 'echo $$ > " + dir.file("a.pid") +
                "; exec sleep 60'\"\nsamples = 1\n"
                "[[job]]\nname = \"b\"\ncommand = \"sh -c 'echo $$ > " + dir.file("b.pid") +
                "; exec sleep 60'\"\nsamples = 1\n");
  ChildProcess colo({COLO_EXECUTABLE, "compare", dir.file("jobs.toml"), "--repeat", "1", "--levels", "timeslice", "--no-plots", "--out",
                     dir.file("out")},
                    {}, dir.file("colo.log"));
  for (int i = 0; i < 200 && !(path_exists(dir.file("a.pid")) && path_exists(dir.file("b.pid"))); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int a = std::atoi(read_file(dir.file("a.pid")).c_str()), b = std::atoi(read_file(dir.file("b.pid")).c_str());
  ASSERT_GT(a, 0) << read_file(dir.file("colo.log"));
  ASSERT_GT(b, 0);
  ::kill(colo.pid(), SIGINT);  // as Ctrl-C: the jobs run in process groups of their own
  int status = colo.wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << read_file(dir.file("colo.log"));
  EXPECT_FALSE(process_alive(a)) << "job a outlived colo compare";
  EXPECT_FALSE(process_alive(b)) << "job b outlived colo compare";
  for (int pid : {a, b}) {
    if (process_alive(pid)) ::kill(pid, SIGKILL);
  }
}

}  // namespace
}  // namespace colo
