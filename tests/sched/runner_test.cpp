// The runner against devices that misbehave and jobs of several GPUs, with
// real processes.

#include "colo/sched/runner.h"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <thread>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/loader_start_group.h"
#include "colo/core/paths.h"
#include "colo/gpu/simulated_device.h"
#include "sched/fake_loader_program.h"
#include "support/temp_dir.h"

namespace colo::sched {
namespace {

// A GPU whose driver stops answering after `good_samples` readings.
class VanishingDevice : public gpu::Device {
 public:
  explicit VanishingDevice(int index, int good_samples) : inner_(index, gpu::SimulatedGpuSpec{}), left_(good_samples) {}
  const gpu::DeviceInfo& info() const override { return inner_.info(); }
  gpu::DeviceSample sample() override {
    if (left_-- <= 0) throw std::runtime_error("NVML_ERROR_GPU_IS_LOST");
    return inner_.sample();
  }
  std::vector<gpu::ProcessUsage> processes() override { throw std::runtime_error("NVML_ERROR_GPU_IS_LOST"); }

 private:
  gpu::SimulatedDevice inner_;
  int left_;
};

// A real-looking GPU (not simulated: the runner reads its process list)
// whose processes are what `list` returns at each reading.
class ListedProcessesDevice : public gpu::Device {
 public:
  explicit ListedProcessesDevice(std::function<std::vector<gpu::ProcessUsage>()> list)
      : inner_(0, gpu::SimulatedGpuSpec{}), list_(std::move(list)) {}
  const gpu::DeviceInfo& info() const override { return inner_.info(); }
  gpu::DeviceSample sample() override { return inner_.sample(); }
  std::vector<gpu::ProcessUsage> processes() override { return list_(); }

 private:
  gpu::SimulatedDevice inner_;
  std::function<std::vector<gpu::ProcessUsage>()> list_;
};

JobSpec shell_job(const std::string& name, const std::string& command, int gpus = 1) {
  JobSpec spec;
  spec.name = name;
  spec.command = {"/bin/sh", "-c", command};
  spec.mem_bytes = int64_t{1} << 30;
  spec.sm_share = 0.1;
  spec.gpus = gpus;
  return spec;
}

RunnerOptions quick_options(const testing::TempDir& dir) {
  RunnerOptions options;
  options.mode = CollocationMode::kShared;  // no MPS daemon for test devices
  options.poll_interval_s = 0.05;
  options.log_dir = dir.file("logs");
  return options;
}

TEST(Runner, KeepsSchedulingWhenAGpuStopsAnswering) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  store.submit({shell_job("a", "sleep 0.3"), shell_job("b", "true")});
  std::vector<gpu::DevicePtr> devices{std::make_shared<VanishingDevice>(0, 1)};
  Runner runner(store, devices, quick_options(dir));
  runner.run_until_done();
  for (const auto& job : store.list()) EXPECT_EQ(job.state, JobState::kCompleted) << job.spec.name << " " << job.reason;
}

// The job's GPU memory is held by a child it forked into a session of its
// own; beside it on the GPU is a process of no job (this test's own).
TEST(Runner, AForkedChildsMemoryIsItsJobsAndAProcessOfNoJobIsNamedNotCharged) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  const std::string child_pid = dir.file("child.pid");
  JobSpec job = shell_job("forks", "setsid sleep 1.5 & echo $! > " + child_pid + "; wait");
  store.submit({job});
  constexpr int64_t kGiB = int64_t{1} << 30;
  const auto own_pid = static_cast<uint32_t>(::getpid());
  auto list = [&]() {
    std::vector<gpu::ProcessUsage> processes{{own_pid, 5 * kGiB}};
    std::ifstream in(child_pid);
    uint32_t pid = 0;
    if (in >> pid && ::kill(static_cast<pid_t>(pid), 0) == 0) processes.push_back({pid, 3 * kGiB});
    return processes;
  };
  std::vector<gpu::DevicePtr> devices{std::make_shared<ListedProcessesDevice>(list)};
  Runner runner(store, devices, quick_options(dir));
  std::vector<Runner::UnattributedProcess> seen;
  runner.run_until_done([&] {
    if (runner.running() > 0) seen = runner.unattributed_processes();
  });
  auto record = store.get(1);
  ASSERT_EQ(record->state, JobState::kCompleted) << record->reason;
  ASSERT_TRUE(record->peak_mem_bytes);
  EXPECT_EQ(*record->peak_mem_bytes, 3 * kGiB) << "the child's memory, not the other process's";
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].pid, own_pid);
  EXPECT_EQ(seen[0].used_mem_bytes, 5 * kGiB);
}

TEST(Runner, AJobThatPrintsNothingAndReportsNoProgressSettlesByItsMemoryAndHoldsNoOneBack) {
  // Silent: no output, no progress file, no SM share declared. Its memory
  // on the GPU (2 GiB, listed under its pid) is all the runner sees.
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  const std::string pid_file = dir.file("silent.pid");
  JobSpec silent = shell_job("silent", "echo $$ > " + pid_file + "; exec sleep 4");
  silent.sm_share = 0;
  JobSpec next = shell_job("next", "sleep 0.2");
  next.sm_share = 0;  // waits for the silent one to settle
  store.submit({silent, next});
  constexpr int64_t kGiB = int64_t{1} << 30;
  auto list = [&]() {
    std::vector<gpu::ProcessUsage> processes;
    std::ifstream in(pid_file);
    uint32_t pid = 0;
    if (in >> pid && ::kill(static_cast<pid_t>(pid), 0) == 0) processes.push_back({pid, 2 * kGiB});
    return processes;
  };
  std::vector<gpu::DevicePtr> devices{std::make_shared<ListedProcessesDevice>(list)};
  RunnerOptions options = quick_options(dir);
  options.thresholds.settle_s = 60;  // what it would wait for a job that shows nothing at all
  options.thresholds.max_settling_per_gpu = 1;
  options.thresholds.settle_quiet_s = 0.5;
  options.thresholds.settle_active_s = 0.5;
  Runner runner(store, devices, options);
  runner.run_until_done();
  auto a = store.get(1), b = store.get(2);
  ASSERT_EQ(a->state, JobState::kCompleted) << a->reason;
  ASSERT_EQ(b->state, JobState::kCompleted) << b->reason;
  ASSERT_TRUE(a->peak_mem_bytes);
  EXPECT_EQ(*a->peak_mem_bytes, 2 * kGiB) << "its own process's memory";
  EXPECT_TRUE(a->sm_share) << "settled without a word from it";
  ASSERT_TRUE(a->start_s && a->end_s && b->start_s);
  EXPECT_LT(*b->start_s, *a->end_s - 1.0) << "the next job started beside it, not after it";
}

TEST(Runner, AMultiGpuJobSeesAllItsGpusAndStartsOnlyWhenAllAreFree) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  gpu::SimulatedGpuSpec spec;
  std::vector<gpu::DevicePtr> devices{std::make_shared<gpu::SimulatedDevice>(0, spec),
                                      std::make_shared<gpu::SimulatedDevice>(1, spec)};
  RunnerOptions options = quick_options(dir);
  options.mode = CollocationMode::kExclusive;
  JobSpec one = shell_job("one", "sleep 0.5; date +%s.%N > " + dir.file("one.end"));
  JobSpec two = shell_job("two", "date +%s.%N > " + dir.file("two.start") + "; echo $CUDA_VISIBLE_DEVICES > " +
                                     dir.file("two.gpus"), 2);
  store.submit({one, two});
  Runner runner(store, devices, options);
  runner.step();
  auto waiting = store.get(2);
  EXPECT_EQ(waiting->state, JobState::kPending);
  EXPECT_NE(waiting->reason.find("needs 2 GPUs at once, 1 can take it"), std::string::npos) << waiting->reason;
  runner.run_until_done();
  EXPECT_EQ(store.get(2)->state, JobState::kCompleted);
  EXPECT_EQ(store.get(2)->gpus, (std::vector<int>{0, 1}));
  EXPECT_GE(std::stod(read_file(dir.file("two.start"))), std::stod(read_file(dir.file("one.end"))))
      << "never partly started: it waited for both GPUs";
  std::string visible = read_file(dir.file("two.gpus"));
  EXPECT_EQ(std::count(visible.begin(), visible.end(), ','), 1) << "both GPUs listed: " << visible;
}

JobSpec model_table_job(const std::string& name, const std::string& builder) {
  JobSpec spec = shell_job(name, "sleep 0.2");
  spec.mem_bytes.reset();
  estimate::PythonModelSource model;
  model.builder = builder;
  model.input = {3, 224, 224};
  model.batch_size = 64;
  spec.model = model;
  return spec;
}

TEST(Runner, ModelEstimatesRunInTheBackgroundOnceEachAndJobsJoinAsTheirsArrive) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  gpu::SimulatedGpuSpec spec;
  std::vector<gpu::DevicePtr> devices{std::make_shared<gpu::SimulatedDevice>(0, spec)};
  std::atomic<bool> release{false};
  std::atomic<int> calls{0};
  RunnerOptions options = quick_options(dir);
  options.estimate_model = [&](const JobSpec&) {
    ++calls;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return ModelEstimate{int64_t{10} << 30, "fake"};
  };
  store.submit({model_table_job("first", "models:a"), model_table_job("second", "models:b"),
                model_table_job("same as second", "models:b"), shell_job("known", "sleep 0.2")});
  Runner runner(store, devices, options);
  runner.step();
  EXPECT_EQ(store.get(1)->state, JobState::kRunning) << "the GPU was empty: it starts before its estimate";
  EXPECT_FALSE(store.get(1)->spec.mem_bytes.has_value());
  auto second = store.get(2);
  EXPECT_EQ(second->state, JobState::kPending);
  EXPECT_NE(second->reason.find("waiting for its memory estimate"), std::string::npos) << second->reason;
  EXPECT_EQ(store.get(4)->state, JobState::kRunning) << "a job of known memory is not held back";
  release = true;
  runner.run_until_done();
  for (const auto& job : store.list()) EXPECT_EQ(job.state, JobState::kCompleted) << job.spec.name << " " << job.reason;
  EXPECT_EQ(store.get(2)->spec.mem_bytes, (int64_t{11} << 30)) << "the estimate plus 10%, kept with the job";
  EXPECT_EQ(store.get(3)->spec.mem_bytes, (int64_t{11} << 30));
  EXPECT_EQ(calls.load(), 2) << "models:a and models:b, once each";
}

TEST(Runner, AStoredJobAskingForMoreGpusThanTheHostHasFailsSayingWhyInsteadOfWaitingForEver) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  store.submit({shell_job("fits", "true"), shell_job("ddp", "true", 2)});  // as from another host's colo submit
  Runner runner(store, {}, quick_options(dir));                             // a host without a GPU
  auto start = std::chrono::steady_clock::now();
  runner.run_until_done();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_EQ(store.get(1)->state, JobState::kCompleted);
  auto ddp = store.get(2);
  EXPECT_EQ(ddp->state, JobState::kFailed);
  EXPECT_NE(ddp->reason.find("'ddp' asks for 2 GPUs; this host has none"), std::string::npos) << ddp->reason;
}

TEST(Runner, LearnsWhatAnotherStoreMeasuredAndItsOwnStoreWins) {
  testing::TempDir dir;
  JobSpec measured = shell_job("measured", "true");
  measured.sm_share.reset();
  JobSpec other = shell_job("other", "exit 0");
  other.sm_share.reset();
  {
    JobStore earlier(dir.file("earlier.db"));
    auto ids = earlier.submit({measured, other});
    earlier.record_sm_share(ids[0], 0.37);
    earlier.record_sm_share(ids[1], 0.61);
  }
  JobStore store(dir.file("jobs.db"));
  store.record_sm_share(store.submit({other})[0], 0.25);
  RunnerOptions options = quick_options(dir);
  options.learn_from = {dir.file("earlier.db")};
  Runner runner(store, {}, options);
  std::optional<double> learned = runner.history().share(job_keys(measured));
  ASSERT_TRUE(learned);
  EXPECT_DOUBLE_EQ(*learned, 0.37);
  EXPECT_DOUBLE_EQ(runner.history().share(job_keys(other)).value_or(0), 0.25) << "its own store's measurement wins";
  Runner alone(store, {}, quick_options(dir));
  EXPECT_FALSE(alone.history().share(job_keys(measured))) << "without --learn-from";

  options.learn_from = {dir.file("no-such.db")};
  try {
    Runner missing(store, {}, options);
    ADD_FAILURE() << "a store that does not exist was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such.db"), std::string::npos) << e.what();
  }
}

// Under MPS a simulated GPU reads 0.85 with job "big": past the 0.80
// ceiling. A job of known share that comes later joins it and is judged by
// the rise it brings, and the runner counts it. A simulated GPU shows a
// job's share from its launch, so the baseline taken at its first progress
// report already holds it: the rise reads 0 and the GPU closes.
TEST(Runner, AJobOfKnownShareThatJoinsAGpuPastTheCeilingIsJudgedAndCounted) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  const std::string trains = "echo '{\"samples\": 1, \"train_s\": 0.1}' > $COLO_PROGRESS_FILE; sleep ";
  JobSpec big = shell_job("big", trains + "12");
  big.sm_share = 0.85;
  store.submit({big});
  RunnerOptions options = quick_options(dir);
  options.mode = CollocationMode::kMps;  // a simulated GPU needs no daemon
  std::vector<gpu::DevicePtr> devices{std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})};
  Runner runner(store, devices, options);
  auto step_for = [&runner](double seconds, const std::function<bool()>& done) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until && !done()) {
      runner.step();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  step_for(1.5, [] { return false; });
  ASSERT_EQ(runner.running(), 1u);
  JobSpec more = shell_job("more", trains + "8");
  more.sm_share = 0.3;
  store.submit({more});
  step_for(8, [&runner] { return runner.judged_stats().joins > 0; });
  EXPECT_EQ(runner.running(), 2u);
  EXPECT_EQ(runner.judged_stats().joins, 1);
  EXPECT_EQ(runner.judged_stats().closings, 1);
  runner.stop_all("the test is over");
}

TEST(Runner, WithoutAGpuJobsRunOneAtATimeUnlessGivenCpuSlots) {
  for (int slots : {1, 2}) {
    testing::TempDir dir;
    JobStore store(dir.file("jobs.db"));
    store.submit({shell_job("a", "sleep 1"), shell_job("b", "sleep 1"), shell_job("c", "sleep 1")});
    RunnerOptions options = quick_options(dir);
    options.cpu_slots = slots;
    Runner runner(store, {}, options);  // a host without a GPU
    runner.step();
    int running = 0;
    std::vector<int> slots_used;
    for (const auto& job : store.list()) {
      if (job.state != JobState::kRunning) continue;
      ++running;
      slots_used.insert(slots_used.end(), job.gpus.begin(), job.gpus.end());
    }
    EXPECT_EQ(running, slots) << slots << " slot(s)";
    std::sort(slots_used.begin(), slots_used.end());
    EXPECT_EQ(std::unique(slots_used.begin(), slots_used.end()), slots_used.end()) << "one job a slot";
    runner.run_until_done();
    for (const auto& job : store.list()) EXPECT_EQ(job.state, JobState::kCompleted) << job.spec.name;
  }
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  RunnerOptions options = quick_options(dir);
  options.cpu_slots = 0;
  EXPECT_THROW(Runner(store, {}, options), InputError);
}

TEST(Runner, EveryOomDeathIsCountedTheLastOnePastTheRetryLimitToo) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  store.submit({shell_job("always-oom", "echo 'torch.OutOfMemoryError: CUDA out of memory.'; exit 1")});
  RunnerOptions options = quick_options(dir);
  options.recovery.max_retries = 1;
  Runner runner(store, {std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})}, options);
  runner.run_until_done();
  auto job = store.get(1);
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_NE(job->reason.find("GPU out of memory 2 times"), std::string::npos) << job->reason;
  EXPECT_EQ(job->oom_deaths, 2) << "the reason and the count must agree";
}

TEST(Runner, AJobThatEndedWhileNoRunnerWatchedKeepsItsOwnEndTime) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  store.submit({shell_job("short", "sleep 0.3")});
  {
    Runner first(store, {std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})}, quick_options(dir));
    first.step();
    ASSERT_EQ(store.get(1)->state, JobState::kRunning);
    first.detach();  // as colod stops: the job runs on
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // it ends 2 s before anyone looks
  Runner second(store, {std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})}, quick_options(dir));
  second.recover();
  auto job = store.get(1);
  ASSERT_EQ(job->state, JobState::kCompleted) << job->reason;
  ASSERT_TRUE(job->start_s && job->end_s);
  EXPECT_LT(*job->end_s - *job->start_s, 1.5) << "its run time counted the time colod was down";
}

// A shell command that runs until file `go` exists.
std::string until_exists(const std::string& go) { return "while [ ! -e " + go + " ]; do sleep 0.02; done"; }

// kill -9 of colod: its runner vanishes without detach(), the job runs on
// and its load stays on the GPU, whose counter keeps counting.
TEST(Runner, AnAdoptedJobKeepsItsEnergyFromBeforeACrashAndGetsWhatItsGpuUsedWhileNoRunnerWatched) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  int64_t id = store.submit({shell_job("long", until_exists(dir.file("go")))}).front();
  gpu::SimulatedGpuSpec spec;
  auto device = std::make_shared<gpu::SimulatedDevice>(0, spec);  // its time moves when advanced
  const double power_w = spec.busy_floor_power_w + (spec.max_power_w - spec.busy_floor_power_w) * 0.1;
  {
    Runner first(store, {device}, quick_options(dir));
    first.step();
    ASSERT_EQ(store.get(id)->state, JobState::kRunning);
    device->advance(50);
    first.step();  // counts those 50 s to the job
  }
  device->advance(100);  // no runner watches
  Runner second(store, {device}, quick_options(dir));
  second.recover();
  EXPECT_NEAR(store.get(id)->energy_while_down_j, 100 * power_w, 1e-6);
  write_file_atomically(dir.file("go"), "");
  second.run_until_done();
  auto job = store.get(id);
  ASSERT_EQ(job->state, JobState::kCompleted) << job->reason;
  EXPECT_EQ(job->attempts, 1) << "adopted, not rerun";
  EXPECT_GE(job->energy_j, 150 * power_w - 1e-6) << "the 50 s before the crash and the 100 s after";
  EXPECT_NEAR(job->energy_while_down_j, 100 * power_w, 1e-6);
  ::waitpid(job->pid, nullptr, 0);  // the first runner's child, which no runner reaps
}

// colod stopped gracefully: the job runs on and ends before the next one
// starts; it is settled from its status file with its part of the energy.
TEST(Runner, AJobThatEndedWhileNoRunnerWatchedGetsItsPartOfWhatItsGpuUsedMeanwhile) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  int64_t id = store.submit({shell_job("short", until_exists(dir.file("go")))}).front();
  gpu::SimulatedGpuSpec spec;
  auto device = std::make_shared<gpu::SimulatedDevice>(0, spec);
  {
    Runner first(store, {device}, quick_options(dir));
    first.step();
    first.step();
    ASSERT_EQ(store.get(id)->state, JobState::kRunning);
    first.detach();
  }
  device->advance(100);  // idle power, 7100 J in all
  // It runs on well after the last reading: a file's time comes from the
  // kernel's coarse clock, up to a tick behind the reading's, so a job that
  // ended within a tick of it could seem to have ended before it.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  write_file_atomically(dir.file("go"), "");
  const std::string status = dir.file("logs/job-" + std::to_string(id) + ".status");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!path_exists(status) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the GPU runs on without it
  Runner second(store, {device}, quick_options(dir));
  second.recover();
  auto job = store.get(id);
  ASSERT_EQ(job->state, JobState::kCompleted) << job->reason;
  EXPECT_GT(job->energy_while_down_j, 0) << "it ran part of the time no runner watched";
  EXPECT_LT(job->energy_while_down_j, 100 * spec.idle_power_w) << "not the time after it ended";
  EXPECT_GE(job->energy_j, job->energy_while_down_j);
}

TEST(Runner, ANewCommandOfAModelMeasuredBeforeGetsThatShareAndNeedNotSettle) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  estimate::PythonModelSource model;
  model.builder = "nets:resnet18";
  model.input = {3, 32, 32};
  model.batch_size = 128;
  // An earlier run of the model, with another learning rate, measured at 0.3.
  JobSpec earlier = shell_job("lr-0.1", "true --lr 0.1");
  earlier.sm_share.reset();
  earlier.model = model;
  int64_t earlier_id = store.submit({earlier}).front();
  store.mark_running(earlier_id, {0}, 1, dir.file("earlier.log"));
  store.record_sm_share(earlier_id, 0.3);
  store.mark_finished(earlier_id, JobState::kCompleted, 0, "", std::nullopt, 0);

  JobSpec settling = shell_job("unknown", "sleep 1");
  settling.sm_share.reset();
  JobSpec same_model = shell_job("lr-0.01", "sleep 0.1; : --lr 0.01");
  same_model.sm_share.reset();
  same_model.model = model;
  JobSpec other = shell_job("other", "sleep 0.1");
  other.sm_share.reset();
  auto ids = store.submit({settling, same_model, other});
  std::vector<gpu::DevicePtr> devices{std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})};
  RunnerOptions one_settles = quick_options(dir);
  one_settles.thresholds.max_settling_per_gpu = 1;  // so that a job of unknown share is seen to wait
  Runner runner(store, devices, one_settles);
  runner.step();
  EXPECT_EQ(store.get(ids[0])->state, JobState::kRunning);
  EXPECT_EQ(store.get(ids[1])->state, JobState::kRunning) << "predicted 0.3 from the same model: " << store.get(ids[1])->reason;
  auto waiting = store.get(ids[2]);
  EXPECT_EQ(waiting->state, JobState::kPending) << "an unknown share waits while the GPU settles";
  EXPECT_NE(waiting->reason.find("settling"), std::string::npos) << waiting->reason;
  runner.run_until_done();
  for (int64_t id : ids) EXPECT_EQ(store.get(id)->state, JobState::kCompleted);

  // Without prediction the same job waits for the settling one, as any unknown share does.
  JobStore again(dir.file("again.db"));
  int64_t measured = again.submit({earlier}).front();
  again.mark_running(measured, {0}, 1, dir.file("earlier.log"));
  again.record_sm_share(measured, 0.3);
  again.mark_finished(measured, JobState::kCompleted, 0, "", std::nullopt, 0);
  auto later = again.submit({settling, same_model});
  RunnerOptions options = one_settles;
  options.predict_shares = false;
  Runner cautious(again, devices, options);
  cautious.step();
  EXPECT_EQ(again.get(later[1])->state, JobState::kPending);
  cautious.run_until_done();
}

TEST(Runner, ASimulatedGpuOnTheWallClockIsNotAdvancedByTheRunnerAsWell) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  int64_t id = store.submit({shell_job("a", "sleep 0.3")}).front();
  gpu::SimulatedGpuSpec spec;
  auto device = std::make_shared<gpu::SimulatedDevice>(0, spec, gpu::SimulatedClock::kWallClock);
  Runner runner(store, {device}, quick_options(dir));
  runner.run_until_done();
  EXPECT_EQ(store.get(id)->state, JobState::kCompleted) << store.get(id)->reason;
  EXPECT_GE(device->now_s(), 0.3);
  EXPECT_GT(store.get(id)->energy_j, 0) << "its GPU's energy while it ran";
  EXPECT_GE(device->energy_j(), spec.idle_power_w * device->now_s());
  EXPECT_LE(device->energy_j(), spec.max_power_w * device->now_s()) << "energy counted once";
}

TEST(WorkloadKey, SameModelSameKeyWhateverTheCommand) {
  JobSpec a = shell_job("a", "python3 train.py --lr 0.1");
  JobSpec b = shell_job("b", "python3 train.py --lr 0.01");
  EXPECT_EQ(workload_key(a), "") << "no model named";
  estimate::PythonModelSource model;
  model.builder = "nets:lenet";
  model.input = {1, 28, 28};
  a.model = model;
  b.model = model;
  EXPECT_EQ(workload_key(a), workload_key(b));
  b.model->batch_size = 256;
  EXPECT_NE(workload_key(a), workload_key(b)) << "a larger batch is another workload";
  JobSpec c = shell_job("c", "colo train a.toml"), d = shell_job("d", "colo train b.toml");
  c.workload = d.workload = "[\"train\",\"mlp\"]";  // what colo read of both specs
  EXPECT_EQ(workload_key(c), workload_key(d));
  EXPECT_EQ(job_spec_from_json(to_json(c)).workload, c.workload) << "kept in the store";
}

// A job that reports `rate` samples per training second through
// $COLO_PROGRESS_FILE, one second of training per report, seven reports.
JobSpec reporting_job(const std::string& name, int rate) {
  JobSpec spec = shell_job(name,
                           "i=0; while [ $i -le 6 ]; do "
                           "printf '{\"samples\": %d, \"train_s\": %d}' $((i * RATE)) $i > \"$COLO_PROGRESS_FILE.tmp\" && "
                           "mv \"$COLO_PROGRESS_FILE.tmp\" \"$COLO_PROGRESS_FILE\"; i=$((i + 1)); sleep 0.25; done");
  spec.env["RATE"] = std::to_string(rate);
  return spec;
}

TEST(Runner, RecordsReportedThroughputAndSlowdownAgainstTheCommandAlone) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  std::vector<gpu::DevicePtr> devices{std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})};
  RunnerOptions options = quick_options(dir);
  store.submit({reporting_job("alone", 1000)});
  {
    Runner runner(store, devices, options);
    runner.run_until_done();
  }
  auto alone = store.get(1);
  ASSERT_TRUE(alone->samples_per_s) << alone->reason;
  EXPECT_NEAR(*alone->samples_per_s, 1000, 1e-6);
  ASSERT_TRUE(alone->alone_samples_per_s);
  EXPECT_TRUE(alone->alone_measured);
  EXPECT_NEAR(*alone->slowdown(), 1.0, 1e-9);
  ASSERT_TRUE(alone->alone_sm_activity) << "it trained alone: its GPU's activity then is kept";
  EXPECT_NEAR(*alone->alone_sm_activity, 0.1, 1e-6) << "the simulated GPU shows its declared share";

  // The same command twice at once, each at half the rate: never alone, so
  // their alone figure is the first job's (a new runner reads it back from
  // the store), and each ran 2x slower.
  store.submit({reporting_job("shared-a", 500), reporting_job("shared-b", 500)});
  Runner runner(store, devices, options);
  runner.run_until_done();
  for (int64_t id : {2, 3}) {
    auto job = store.get(id);
    ASSERT_EQ(job->state, JobState::kCompleted) << job->reason;
    ASSERT_TRUE(job->samples_per_s);
    EXPECT_NEAR(*job->samples_per_s, 500, 1e-6);
    EXPECT_FALSE(job->alone_measured);
    EXPECT_FALSE(job->alone_sm_activity) << "never alone on its GPU";
    ASSERT_TRUE(job->slowdown());
    EXPECT_NEAR(*job->slowdown(), 2.0, 1e-9);
    EXPECT_NEAR(to_json(*job)["slowdown"].get<double>(), 2.0, 1e-9);
  }
}

TEST(Runner, AJobThatReportsNothingHasNoThroughput) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  std::vector<gpu::DevicePtr> devices{std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})};
  store.submit({shell_job("quiet", "echo not json > \"$COLO_PROGRESS_FILE\"; sleep 0.2")});
  Runner runner(store, devices, quick_options(dir));
  runner.run_until_done();
  auto job = store.get(1);
  EXPECT_EQ(job->state, JobState::kCompleted);
  EXPECT_FALSE(job->samples_per_s);
  EXPECT_FALSE(job->slowdown());
  EXPECT_FALSE(to_json(*job).contains("slowdown"));
}

// One command for every job below, so they share the alone figure: it
// reports RATE samples per training second (SLOW_RATE once the file SLOW_IF
// exists), one training second per report, STEPS + 1 reports; MARK, when
// set, is created first.
JobSpec paced_job(const std::string& name, std::map<std::string, std::string> env) {
  JobSpec spec = shell_job(name,
                           "[ -n \"$MARK\" ] && touch \"$MARK\"; i=0; s=0; while [ $i -le $STEPS ]; do "
                           "r=$RATE; [ -n \"$SLOW_IF\" ] && [ -e \"$SLOW_IF\" ] && r=$SLOW_RATE; "
                           "printf '{\"samples\": %d, \"train_s\": %d}' $s $i > \"$COLO_PROGRESS_FILE.tmp\" && "
                           "mv \"$COLO_PROGRESS_FILE.tmp\" \"$COLO_PROGRESS_FILE\"; s=$((s + r)); i=$((i + 1)); "
                           "sleep 0.25; done");
  spec.env = std::move(env);
  return spec;
}

// A trains at 1000/s (1000/s alone) until B joins it, then at 500/s; B
// trains at `b_rate` (alone: 1000/s, learned from a first job of the same
// command); C is submitted once B has trained 4 s. Returns C's waiting
// reasons as they were read, and the finished records of B and C.
struct JoinScenario {
  std::vector<std::string> c_reasons;
  JobRecord b, c;
};

JoinScenario run_join_scenario(int b_rate) {
  testing::TempDir dir;
  JobStore store(dir.file("jobs.db"));
  std::vector<gpu::DevicePtr> devices{std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})};
  std::string mark = dir.file("b.started");
  store.submit({paced_job("alone", {{"RATE", "1000"}, {"STEPS", "6"}})});
  Runner runner(store, devices, quick_options(dir));
  runner.run_until_done();
  store.submit({paced_job("a", {{"RATE", "1000"}, {"SLOW_IF", mark}, {"SLOW_RATE", "500"}, {"STEPS", "20"}})});
  for (int i = 0; i < 20; ++i) {  // A reports 3 s of training alone, read as a runner reads it
    runner.step();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  store.submit({paced_job("b", {{"MARK", mark}, {"RATE", std::to_string(b_rate)}, {"STEPS", "12"}})});
  for (int i = 0; i < 20; ++i) {  // B reports 4 s of training
    runner.step();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  store.submit({paced_job("c", {{"RATE", "1000"}, {"STEPS", "1"}})});
  JoinScenario result;
  for (int i = 0; i < 200 && store.get(4)->state != JobState::kRunning && store.get(4)->state != JobState::kCompleted; ++i) {
    runner.step();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::string reason = store.get(4)->reason;
    if (!reason.empty() && (result.c_reasons.empty() || result.c_reasons.back() != reason)) result.c_reasons.push_back(reason);
  }
  runner.run_until_done();
  result.b = *store.get(3);
  result.c = *store.get(4);
  return result;
}

bool any_contains(const std::vector<std::string>& texts, const std::string& part) {
  return std::any_of(texts.begin(), texts.end(), [&](const std::string& t) { return t.find(part) != std::string::npos; });
}

TEST(Runner, AGpuWhoseTrainingThroughputStopsGrowingTakesNoFurtherJob) {
  // Together A and B train 0.5 + 0.1 of a job alone: less than A by itself.
  JoinScenario run = run_join_scenario(100);
  EXPECT_TRUE(any_contains(run.c_reasons, "training throughput stopped growing (with job 3")) << run.c_reasons.size();
  ASSERT_EQ(run.c.state, JobState::kCompleted) << run.c.reason;
  EXPECT_GE(*run.c.start_s, *run.b.end_s - 0.5);  // it waited for a job to leave (B ends first)
}

TEST(Runner, AGpuWhoseTrainingThroughputGrewTakesTheNextJob) {
  // Together A and B train 0.5 + 0.9 of a job alone: more than A by itself.
  JoinScenario run = run_join_scenario(900);
  EXPECT_FALSE(any_contains(run.c_reasons, "stopped growing"));
  ASSERT_EQ(run.c.state, JobState::kCompleted) << run.c.reason;
  EXPECT_LT(*run.c.start_s, *run.b.end_s - 1.0);  // it joined while B still trained
}

// Jobs that read `data` through the scheduler's producer: each succeeds only
// when launched after the producer's ready file was written.
// A runner on one simulated GPU whose shared-loader producers are `colo`'s stand-in.
std::unique_ptr<Runner> runner_with_loader_program(JobStore& store, const testing::TempDir& dir,
                                                   const testing::FakeLoaderProgram& colo) {
  RunnerOptions options = quick_options(dir);
  options.colo_program = colo.program();
  return std::make_unique<Runner>(
      store, std::vector<gpu::DevicePtr>{std::make_shared<gpu::SimulatedDevice>(0, gpu::SimulatedGpuSpec{})}, options);
}

JobSpec loader_job(const std::string& name, const testing::TempDir& dir, const std::string& data) {
  JobSpec spec = shell_job(name, "test -e " + dir.file("logs/loader-1.ready") + " && test \"$COLO_LOADER\" = " + data);
  spec.loader = data;
  return spec;
}

TEST(Runner, JobsOnASharedLoaderStartTogetherOnlyOnceTheirProducerHasFilledItsRing) {
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(dir);
  JobStore store(dir.file("jobs.db"));
  const std::string data = dir.file("data.toml");
  auto ids = store.submit({loader_job("a", dir, data), loader_job("b", dir, data), shell_job("plain", "true")});
  auto runner = runner_with_loader_program(store, dir, colo);
  for (int round = 0; round < 5; ++round) {
    runner->step();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int64_t id : {ids[0], ids[1]}) {
    auto job = store.get(id);
    EXPECT_EQ(job->state, JobState::kPending);
    EXPECT_NE(job->reason.find("waiting for its shared loader (" + data + ") to fill its ring"), std::string::npos)
        << job->reason;
  }
  EXPECT_NE(store.get(ids[2])->state, JobState::kPending) << "a job without a loader does not wait";
  ASSERT_TRUE(colo.wait_for_starts(1));
  EXPECT_EQ(colo.starts().size(), 1u) << "one producer for both";
  colo.fill();
  runner->run_until_done();
  for (int64_t id : ids) EXPECT_EQ(store.get(id)->state, JobState::kCompleted) << store.get(id)->reason;
  auto a = store.get(ids[0]), b = store.get(ids[1]);
  EXPECT_LT(std::abs(*a->start_s - *b->start_s), 0.5) << "both started in the round their producer became ready";
  EXPECT_EQ(colo.starts().size(), 1u);
  EXPECT_FALSE(process_alive(colo.starts()[0])) << "stopped once its jobs ended";
}

TEST(Runner, ASharedLoaderProducerOnTheGpuIsColosOwnNotAProcessOfNoJob) {
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(dir);
  JobStore store(dir.file("jobs.db"));
  const std::string data = dir.file("data.toml");
  store.submit({loader_job("a", dir, data)});
  auto list = [&colo]() {
    std::vector<gpu::ProcessUsage> processes;
    for (int pid : colo.starts()) processes.push_back({static_cast<uint32_t>(pid), int64_t{1} << 30});
    return processes;
  };
  RunnerOptions options = quick_options(dir);
  options.colo_program = colo.program();
  Runner runner(store, {std::make_shared<ListedProcessesDevice>(list)}, options);
  for (int round = 0; round < 5 && colo.starts().empty(); ++round) {
    runner.step();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(colo.wait_for_starts(1));
  runner.step();  // a round that sees the producer on the GPU
  EXPECT_TRUE(runner.unattributed_processes().empty()) << "pid " << runner.unattributed_processes()[0].pid;
  colo.fill();
  runner.run_until_done();
}

// A GPU the runner takes for a real one (it is no SimulatedDevice: jobs
// on it are MPS clients under mode mps), reading like a simulated one.
class UnsimulatedDevice : public gpu::Device {
 public:
  explicit UnsimulatedDevice(int index) : inner_(index, gpu::SimulatedGpuSpec{}) {}
  const gpu::DeviceInfo& info() const override { return inner_.info(); }
  gpu::DeviceSample sample() override { return inner_.sample(); }
  std::vector<gpu::ProcessUsage> processes() override { return inner_.processes(); }

 private:
  gpu::SimulatedDevice inner_;
};

TEST(Runner, UnderMpsASharedLoaderProducerIsAClientOfTheRunnersDaemonSeeingEveryGpu) {
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(
      dir, "echo \"$CUDA_MPS_PIPE_DIRECTORY|$CUDA_VISIBLE_DEVICES\" > '" + dir.file("producer.env") + "'");
  JobStore store(dir.file("jobs.db"));
  JobSpec job = loader_job("a", dir, dir.file("data.toml"));
  job.command.back() += " && echo \"$CUDA_MPS_PIPE_DIRECTORY\" > " + dir.file("job.env");
  const int64_t id = store.submit({job}).front();
  RunnerOptions options = quick_options(dir);
  options.mode = CollocationMode::kMps;
  options.mps_control = COLO_SOURCE_DIR "/tests/gpu/fake_mps_control.sh";
  options.colo_program = colo.program();
  Runner runner(store, {std::make_shared<UnsimulatedDevice>(0), std::make_shared<UnsimulatedDevice>(1)}, options);
  colo.fill();
  runner.run_until_done();
  ASSERT_EQ(store.get(id)->state, JobState::kCompleted) << store.get(id)->reason;
  const std::string pipe = read_file(dir.file("job.env"));
  ASSERT_NE(pipe, "\n") << "the job is an MPS client";
  EXPECT_EQ(read_file(dir.file("producer.env")), pipe.substr(0, pipe.size() - 1) + "|0,1\n")
      << "the producer is a client of the same daemon, seeing both GPUs by ordinal";
}

TEST(Runner, OutsideMpsASharedLoaderProducerKeepsTheRunnersEnvironment) {
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(
      dir, "echo \"${CUDA_MPS_PIPE_DIRECTORY-unset}|${CUDA_VISIBLE_DEVICES-unset}\" > '" + dir.file("producer.env") + "'");
  JobStore store(dir.file("jobs.db"));
  const int64_t id = store.submit({loader_job("a", dir, dir.file("data.toml"))}).front();
  RunnerOptions options = quick_options(dir);  // mode shared
  options.colo_program = colo.program();
  Runner runner(store, {std::make_shared<UnsimulatedDevice>(0)}, options);
  colo.fill();
  runner.run_until_done();
  ASSERT_EQ(store.get(id)->state, JobState::kCompleted) << store.get(id)->reason;
  auto inherited = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value ? value : "unset");
  };
  EXPECT_EQ(read_file(dir.file("producer.env")),
            inherited("CUDA_MPS_PIPE_DIRECTORY") + "|" + inherited("CUDA_VISIBLE_DEVICES") + "\n");
}

// A loader job that writes its $COLO_LOADER_START_GROUP ("none" unset) to
// NAME.group in `dir` and, a moment later (the scheduler writes it after
// the round), the group's size as written then to NAME.size.
JobSpec group_recording_job(const std::string& name, const testing::TempDir& dir, const std::string& data) {
  JobSpec job = loader_job(name, dir, data);
  job.command = {"/bin/sh", "-c",
                 "echo \"${COLO_LOADER_START_GROUP-none}\" > " + dir.file(name + ".group") +
                     "; sleep 0.3; cat \"$COLO_LOADER_START_GROUP.group\" > " + dir.file(name + ".size") +
                     " 2>/dev/null || echo none > " + dir.file(name + ".size") +
                     "; sleep 0.3"};  // ending only once the others have read the size too
  return job;
}

// The job id of the job named `name` in `store`, as text.
std::string id_of(JobStore& store, const std::string& name) {
  for (const auto& job : store.list()) {
    if (job.spec.name == name) return std::to_string(job.id);
  }
  return "(no job " + name + ")";
}

// Runs the store's jobs once the first round has started `producers`
// stand-in producers, which then fill their rings together; every job must
// complete.
void run_filling_each_loader_once_started(JobStore& store, const testing::TempDir& dir,
                                          const testing::FakeLoaderProgram& colo, size_t producers) {
  auto runner = runner_with_loader_program(store, dir, colo);
  runner->step();
  ASSERT_TRUE(colo.wait_for_starts(producers));
  colo.fill();
  runner->run_until_done();
  for (const auto& job : store.list()) ASSERT_EQ(job.state, JobState::kCompleted) << job.spec.name << job.reason;
}

TEST(Runner, TheJobsLaunchedTogetherOnAFilledSharedLoaderAreItsStartGroupAndTheirCountIsWritten) {
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(dir);
  JobStore store(dir.file("jobs.db"));
  store.submit({group_recording_job("a", dir, dir.file("data.toml")),
                group_recording_job("b", dir, dir.file("data.toml")),
                group_recording_job("alone", dir, dir.file("other.toml"))});
  run_filling_each_loader_once_started(store, dir, colo, 2);
  // Producers are numbered as they start: data.toml's first (its jobs came first).
  const std::string ready = dir.file("logs/loader-1.ready"), other = dir.file("logs/loader-2.ready");
  EXPECT_EQ(read_file(dir.file("a.group")), ready + "\n");
  EXPECT_EQ(read_file(dir.file("b.group")), ready + "\n");
  // The count, then the members' job ids.
  EXPECT_EQ(read_file(dir.file("a.size")), "2\n" + id_of(store, "a") + " " + id_of(store, "b") + "\n");
  EXPECT_EQ(read_file(dir.file("alone.group")), other + "\n");
  EXPECT_EQ(read_file(dir.file("alone.size")), "1\n" + id_of(store, "alone") + "\n") << "a group of one waits for no one";
}

TEST(Runner, AStartGroupCountsOnlyTheJobsTheRoundCouldLaunchNotThoseStillWaitingForRoom) {
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(dir);
  JobStore store(dir.file("jobs.db"));
  JobSpec first = group_recording_job("first", dir, dir.file("data.toml"));
  JobSpec second = group_recording_job("second", dir, dir.file("data.toml"));
  first.mem_bytes = second.mem_bytes = int64_t{50} << 30;  // one at a time on the 80 GiB GPU
  first.command.back() += "; sleep 0.3";
  store.submit({first, second});
  run_filling_each_loader_once_started(store, dir, colo, 1);
  const std::string ready = dir.file("logs/loader-1.ready");
  EXPECT_EQ(read_file(dir.file("first.group")), ready + "\n");
  EXPECT_EQ(read_file(dir.file("first.size")), "1\n" + id_of(store, "first") + "\n") << "its first chunk waits for no one";
  EXPECT_EQ(read_file(dir.file("second.group")), "none\n") << "launched later, it joins as a late consumer";
}

// A job waiting for its shared loader, whose stand-in producer has started
// and not filled its ring.
class RunnerWithAJobWaitingForItsLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    id = store.submit({loader_job("a", dir, dir.file("data.toml"))}).front();
    runner = runner_with_loader_program(store, dir, colo);
    runner->step();
    ASSERT_EQ(store.get(id)->state, JobState::kPending);
    ASSERT_TRUE(colo.wait_for_starts(1));
    ASSERT_TRUE(process_alive(colo.starts()[0]));
  }
  testing::TempDir dir;
  testing::FakeLoaderProgram colo{dir};
  JobStore store{dir.file("jobs.db")};
  int64_t id = 0;
  std::unique_ptr<Runner> runner;
};

TEST_F(RunnerWithAJobWaitingForItsLoader, CancellingTheJobStopsTheProducer) {
  store.cancel(id);
  runner->step();
  EXPECT_FALSE(process_alive(colo.starts()[0])) << "no job reads it any more";
}

TEST_F(RunnerWithAJobWaitingForItsLoader, DetachingStopsAProducerThatOnlyWaitingJobsHold) {
  runner->detach();
  EXPECT_FALSE(process_alive(colo.starts()[0])) << "no consumer ever came: it would never idle-exit";
}

TEST(Runner, JobsWhoseSharedLoaderFailsBeforeFillingItsRingFailWithItsReasonWithoutRunning) {
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(dir, "echo 'colo: error: /data/images: a directory of class folders' >&2; exit 2");
  JobStore store(dir.file("jobs.db"));
  const std::string data = dir.file("data.toml");
  JobSpec a = loader_job("a", dir, data), b = loader_job("b", dir, data);
  a.command = b.command = {"/bin/sh", "-c", "touch " + dir.file("ran")};
  auto ids = store.submit({a, b});
  auto runner = runner_with_loader_program(store, dir, colo);
  runner->run_until_done();
  for (int64_t id : ids) {
    auto job = store.get(id);
    EXPECT_EQ(job->state, JobState::kFailed);
    EXPECT_NE(job->reason.find("its shared loader (" + data + ") exited before filling its ring: colo: error: "
                               "/data/images: a directory of class folders"),
              std::string::npos)
        << job->reason;
  }
  EXPECT_FALSE(path_exists(dir.file("ran"))) << "a job without its producer is not launched";
  EXPECT_EQ(colo.starts().size(), 1u) << "both jobs waited on the one that failed";
}


}  // namespace
}  // namespace colo::sched
