// The scheduler's shared-loader producers with a stand-in `colo` program:
// when the jobs that read one may be launched.

#include "colo/sched/loader_producers.h"

#include <gtest/gtest.h>

#include <csignal>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/data/image_folder.h"
#include "colo/data/loader_server.h"
#include "colo/data/shared_loader.h"
#include "sched/fake_loader_program.h"
#include "support/temp_dir.h"

namespace colo::sched {
namespace {

// Whether `condition` holds within `timeout_s`, polled every 20 ms.
bool within(double timeout_s, const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

// Producers started as a stand-in `colo` program (FakeLoaderProgram) that
// fills its ring once the test says so, logging under dir/logs.
class LoaderProducersOnAStandIn : public ::testing::Test {
 protected:
  void SetUp() override { make_directories(dir.file("logs")); }
  testing::TempDir dir;
  testing::FakeLoaderProgram colo{dir};
  LoaderProducers producers{colo.program(), dir.file("logs")};
};

TEST_F(LoaderProducersOnAStandIn, AProducerIsReadyOnlyOnceItWroteItsReadyFileNotAnEarlierProducersOne) {
  write_file_atomically(dir.file("logs/loader-1.ready"), "{}\n");  // left by an earlier runner's producer
  const std::string data = dir.file("data.toml");
  producers.acquire(data, 1);
  EXPECT_FALSE(within(0.3, [&] { return producers.ready(data); })) << "its ring is not full yet";
  colo.fill();
  EXPECT_TRUE(within(10, [&] { return producers.ready(data); }));
  EXPECT_TRUE(path_exists(dir.file("logs/loader-1.ready")));
  producers.acquire(dir.path() + "/./data.toml", 2);  // a second job on the same file
  EXPECT_TRUE(producers.ready(data)) << "a running producer that was ready stays ready";
  EXPECT_EQ(producers.started(), 1);
  ASSERT_TRUE(colo.wait_for_starts(1));
  EXPECT_EQ(colo.starts().size(), 1u);
}

TEST_F(LoaderProducersOnAStandIn, AProducerBecomesReadyBetweenRoundsSoThatARoundsJobsSeeItAlike) {
  const std::string data = dir.file("data.toml");
  producers.acquire(data, 1);
  producers.acquire(data, 2);
  producers.begin_round();
  EXPECT_FALSE(producers.ready(data));
  colo.fill();
  ASSERT_TRUE(within(10, [&] { return path_exists(dir.file("logs/loader-1.ready")); }));
  EXPECT_FALSE(producers.ready(data)) << "filled during the round: job 2 would see it, job 1 did not";
  EXPECT_EQ(producers.start_group_of(data), "");
  producers.end_round();
  producers.begin_round();
  EXPECT_TRUE(producers.ready(data));
  EXPECT_EQ(producers.start_group_of(data), dir.file("logs/loader-1.ready"));
  producers.joined_start_group(data, 1);  // job 1 launched; job 2 could not be (cancelled meanwhile, say)
  producers.end_round();
  EXPECT_EQ(read_file(dir.file("logs/loader-1.ready.group")), "1\n1\n");
  producers.begin_round();
  EXPECT_EQ(producers.start_group_of(data), "") << "a later round's jobs join as late consumers";
  producers.end_round();
}

TEST_F(LoaderProducersOnAStandIn, AStartGroupMemberThatEndsLeavesTheGroupSizeWritten) {
  const std::string data = dir.file("data.toml");
  for (int64_t job : {1, 2, 3}) producers.acquire(data, job);
  colo.fill();
  ASSERT_TRUE(within(10, [&] { return path_exists(dir.file("logs/loader-1.ready")); }));
  producers.begin_round();
  ASSERT_TRUE(producers.ready(data));
  for (int64_t job : {1, 2, 3}) producers.joined_start_group(data, job);
  producers.end_round();
  const std::string size_file = dir.file("logs/loader-1.ready.group");
  EXPECT_EQ(read_file(size_file), "3\n1 2 3\n");
  producers.release(2);  // died while importing torch: the other two need not wait for it
  EXPECT_EQ(read_file(size_file), "2\n1 3\n");
}

TEST_F(LoaderProducersOnAStandIn, AJobThatLeavesWhileWaitingStopsItsProducer) {
  producers.acquire(dir.file("data.toml"), 7);
  ASSERT_FALSE(producers.ready(dir.file("data.toml")));
  ASSERT_TRUE(colo.wait_for_starts(1));
  producers.release(7);
  EXPECT_TRUE(producers.running().empty());
  EXPECT_FALSE(process_alive(colo.starts()[0]));
}

// Producers started as a stand-in `colo` program that fails at once: its
// last line of output (a blank line after it) is its error.
class LoaderProducersOnAFailingStandIn : public ::testing::Test {
 protected:
  void SetUp() override { make_directories(dir.file("logs")); }
  testing::TempDir dir;
  testing::FakeLoaderProgram colo{dir, "echo 'colo: error: bad data file' >&2; echo >&2; exit 3"};
  LoaderProducers producers{colo.program(), dir.file("logs")};
  const std::string data = dir.file("data.toml");
};

TEST_F(LoaderProducersOnAFailingStandIn, AProducerThatExitedCountsAsReadyWithItsErrorAndIsNotStartedAgainForTheJobWaitingOnIt) {
  producers.acquire(data, 1);
  EXPECT_EQ(producers.failure(data), "") << "running";
  EXPECT_TRUE(within(10, [&] { return producers.ready(data); })) << "its job is not held back";
  EXPECT_EQ(producers.failure(data), "colo: error: bad data file") << "the last line of its log";
  producers.acquire(data, 1);  // the runner's next round, had it still waited
  EXPECT_EQ(producers.started(), 1);
}

// Two jobs of one round on a producer that fails at once: by the second
// job's acquire it had exited (seen once under load: it was started again,
// once per job). The second joins the first in its failure.
TEST_F(LoaderProducersOnAFailingStandIn, AProducerThatExitedWhileAJobWaitedIsNotStartedAgainForAnotherJobOfTheRound) {
  producers.begin_round();
  producers.acquire(data, 1);
  ASSERT_TRUE(colo.wait_for_starts(1));
  ASSERT_TRUE(within(10, [&] { return !process_alive(colo.starts()[0]); }));
  producers.acquire(data, 2);
  producers.end_round();
  EXPECT_EQ(producers.started(), 1);
  EXPECT_TRUE(within(10, [&] { return producers.ready(data); }));
  EXPECT_EQ(producers.failure(data), "colo: error: bad data file");
}

TEST(LoaderProducers, AProducerThatTakesTooLongToFillItsRingCountsAsReadyAfterTheWait) {
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(dir);  // never fills
  make_directories(dir.file("logs"));
  LoaderProducers producers(colo.program(), dir.file("logs"), /*fill_wait_s=*/0.5);
  const std::string data = dir.file("data.toml");
  producers.acquire(data, 1);
  EXPECT_FALSE(producers.ready(data));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(producers.ready(data));
  EXPECT_FALSE(path_exists(dir.file("logs/loader-1.ready")));
}

// A data file over 20 small images in `dir`, served at ipc://dir/loader.sock.
std::string write_data_file(const testing::TempDir& dir) {
  data::write_image_folder(dir.file("images"), 20, std::vector<int64_t>(20, 0), 16, 80,
                           [](int64_t) { return std::vector<uint8_t>(16 * 16 * 3, 100); }, [](int64_t) {});
  const std::string data = dir.file("data.toml");
  write_file_atomically(data, "root = \"images\"\nsize = 8\nthreads = 1\nchunk = 4\nbuffer = 4\naddress = \"ipc://" +
                                  dir.file("loader.sock") + "\"\n");
  return data;
}

// A producer on a thread for `data_file`, as another program's would be.
struct ProducerElsewhere {
  explicit ProducerElsewhere(const std::string& data_file)
      : server(data::parse_loader_serve_spec(data_file)), serving([this] { server.serve(0); }) {}
  ~ProducerElsewhere() {
    server.stop();
    serving.join();
  }
  data::LoaderServer server;
  std::thread serving;
};

TEST(LoaderProducers, JobsOfADataFileAProducerAlreadyServesReadFromItAndNoneIsStartedOrStopped) {
  // A user's own `colo loader serve`, or one a runner left running before
  // a restart: started again here, it would have been refused (or, before,
  // taken its ipc:// address over, leaving its consumers unreachable).
  testing::TempDir dir;
  testing::FakeLoaderProgram colo(dir);
  make_directories(dir.file("logs"));
  LoaderProducers producers(colo.program(), dir.file("logs"), LoaderProducers::kFillWaitS, /*hold_renew_s=*/0.2);
  const std::string data = write_data_file(dir);
  {
    ProducerElsewhere other(data);
    auto held_s = [&] {
      return data::query_loader_stats("ipc://" + dir.file("loader.sock"), 2.0).value()["held_s"].get<double>();
    };
    producers.acquire(data, 1);
    EXPECT_GT(held_s(), 30) << "held for the job until it connects";
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    const double before = held_s();
    producers.begin_round();
    producers.end_round();
    EXPECT_GT(held_s(), before + 0.2) << "renewed while its job runs";
    EXPECT_TRUE(producers.ready(data)) << "its ring is long full";
    EXPECT_EQ(producers.start_group_of(data), "");
    EXPECT_EQ(producers.failure(data), "");
    EXPECT_EQ(producers.started(), 0);
    producers.release(1);
    EXPECT_TRUE(data::query_loader_stats("ipc://" + dir.file("loader.sock"), 2.0).has_value()) << "still serving";
  }
  producers.acquire(data, 2);  // gone now: one is started here
  EXPECT_EQ(producers.started(), 1);
}

TEST(LoaderProducers, AProducerWhoseJobsEndedIsLeftRunningWhileConsumersFromElsewhereReadOrHoldIt) {
  // Another scheduler's jobs found it serving and read from it (above), or
  // are about to: stopping it with this scheduler's last job would end theirs.
  for (bool reading : {true, false}) {
    testing::TempDir dir;
    testing::FakeLoaderProgram colo(dir);
    make_directories(dir.file("logs"));
    const std::string data = write_data_file(dir);
    LoaderProducers producers(colo.program(), dir.file("logs"));
    producers.acquire(data, 1);
    ASSERT_TRUE(colo.wait_for_starts(1));
    {
      ProducerElsewhere serving_there(data);  // stands in for what was started, serving at the file's address
      std::optional<data::SharedLoaderClient> reader;
      if (reading) {
        reader.emplace("ipc://" + dir.file("loader.sock"), 4);  // another scheduler's job
      } else {
        ASSERT_TRUE(data::hold_loader("ipc://" + dir.file("loader.sock"), 30, 2.0));  // its job not connected yet
      }
      producers.release(1);
      EXPECT_TRUE(process_alive(colo.starts()[0])) << (reading ? "left running for its reader" : "held");
      EXPECT_TRUE(producers.running().empty()) << "no longer this scheduler's";
    }
    ::kill(colo.starts()[0], SIGKILL);
  }
}

}  // namespace
}  // namespace colo::sched
