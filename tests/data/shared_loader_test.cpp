#include "colo/data/shared_loader.h"

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <functional>
#include <optional>
#include <thread>
#include <tuple>

#include <sched.h>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/loader_start_group.h"
#include "colo/core/paths.h"
#include "colo/data/image_folder.h"
#include "colo/data/loader_sampler.h"
#include "colo/data/loader_server.h"
#include "support/temp_dir.h"

namespace colo::data {
namespace {

// What a test's producer does differently from the defaults.
struct ProducerOptions {
  double stall_s = 5;
  double heartbeat_timeout_s = 10;
  int64_t ahead = 8;
  LoaderPace pace = LoaderPace::fastest;
  std::string ready_file = "";  // LoaderServeSpec::ready_file
  double start_group_wait_s = 20;
  double idle_exit_s = 0;
};

// A producer on a thread, over a folder of `images` one-class-each images
// (so a label names its image).
class Producer {
 public:
  Producer(const testing::TempDir& dir, int64_t images, int64_t chunk, int64_t buffer, ProducerOptions options = {},
           std::unique_ptr<RingMirror> mirror = nullptr) {
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < images; ++i) labels.push_back(i);
    std::string root = dir.file("images");
    write_image_folder(root, images, labels, 16, 80,
                       [](int64_t i) { return std::vector<uint8_t>(16 * 16 * 3, static_cast<uint8_t>(i)); },
                       [](int64_t) {});
    spec.pipeline.root = root;
    spec.pipeline.size = 8;
    spec.pipeline.threads = 2;
    spec.address = "ipc://" + dir.file("loader.sock");
    spec.chunk = chunk;
    spec.buffer = buffer;
    spec.ahead = options.ahead;
    spec.pace = options.pace;
    spec.stall_s = options.stall_s;
    spec.heartbeat_timeout_s = options.heartbeat_timeout_s;
    spec.ready_file = options.ready_file;
    spec.start_group_wait_s = options.start_group_wait_s;
    spec.idle_exit_s = options.idle_exit_s;
    server = std::make_unique<LoaderServer>(spec, std::move(mirror));
    thread = std::thread([this] {
      try {
        server->serve(0);
      } catch (const std::exception& e) {
        failure = e.what();
      }
      ended = true;
    });
  }
  ~Producer() { stop(); }
  void stop() {
    if (!server) return;
    server->stop();
    thread.join();
    server.reset();
  }

  std::string failure;            // what serve() threw, once ended
  std::atomic<bool> ended{false};  // serve() returned or threw
  LoaderServeSpec spec;
  std::unique_ptr<LoaderServer> server;
  std::thread thread;
};

std::vector<int64_t> labels_of(SharedLoaderClient& client, int64_t batches) {
  std::vector<int64_t> all, labels(static_cast<size_t>(client.batch_size()));
  std::vector<uint8_t> pixels(static_cast<size_t>(client.batch_size() * 3 * 8 * 8));
  for (int64_t b = 0; b < batches; ++b) {
    client.next_batch(pixels.data(), labels.data());
    all.insert(all.end(), labels.begin(), labels.end());
  }
  return all;
}

// Seconds `client` takes to read `batches` batches.
double seconds_to_read(SharedLoaderClient& client, int64_t batches) {
  auto start = std::chrono::steady_clock::now();
  labels_of(client, batches);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(SharedLoader, AStoppedProducerLeavesNoSocketFileBehind) {
  testing::TempDir dir;
  Producer producer(dir, 8, 4, 4);
  EXPECT_TRUE(path_exists(dir.file("loader.sock"))) << "it listens there while it serves";
  producer.stop();
  EXPECT_FALSE(path_exists(dir.file("loader.sock"))) << "a clean stop (SIGTERM's) removes its ipc:// file";
}

TEST(SharedLoader, TheProducerReportsEachConsumersThroughputAndDataWaitToASampler) {
  testing::TempDir dir;
  Producer producer(dir, 40, 4, 8, {.heartbeat_timeout_s = 2});  // beats every 0.5 s
  std::string nobody = "ipc://" + dir.file("nobody.sock");
  LoaderSampler sampler({producer.spec.address, nobody}, 0.1, dir.file("loaders.jsonl"));
  sampler.start();
  SharedLoaderClient client(producer.spec.address, 8);
  for (int i = 0; i < 20; ++i) {  // a consumer that trains 20 ms a step
    labels_of(client, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  nlohmann::json consumer;
  for (int tries = 0; tries < 50; ++tries) {  // until a beat after the last batch arrived
    auto stats = query_loader_stats(producer.spec.address, 1.0);
    ASSERT_TRUE(stats.has_value());
    ASSERT_EQ((*stats)["consumer_stats"].size(), 1u);
    consumer = (*stats)["consumer_stats"][0];
    if (consumer.value("samples", 0.0) == 160) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(consumer.value("samples", 0.0), 160);
  EXPECT_GT(consumer["samples_per_s"].get<double>(), 0);
  double wait = consumer["wait_pct"].get<double>();
  EXPECT_GE(wait, 0);
  EXPECT_LT(wait, 100) << "it spent most of its time training, not waiting";
  sampler.stop();

  nlohmann::json summary = sampler.summary();
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_GE(summary[0]["answers"].get<int>(), 3);
  EXPECT_GT(summary[0]["samples_per_s"].get<double>(), 0);
  EXPECT_GT(summary[0]["cpu_core_s_per_sample"].get<double>(), 0);
  EXPECT_EQ(summary[0]["consumers_max"].get<int>(), 1);
  EXPECT_LE(summary[0]["buffer_depth_max"].get<double>(), 8);
  ASSERT_EQ(summary[0]["consumer_stats"].size(), 1u) << "the consumer's latest report";
  EXPECT_GT(summary[0]["consumer_stats"][0]["samples"].get<double>(), 0);
  EXPECT_EQ(summary[1]["answers"].get<int>(), 0) << "no producer there";
  EXPECT_GE(summary[1]["unanswered"].get<int>(), 1);
  EXPECT_FALSE(summary[1].contains("samples_per_s"));
  std::ifstream lines(dir.file("loaders.jsonl"));
  int written = 0;
  for (std::string line; std::getline(lines, line);) ++written;
  EXPECT_EQ(written, summary[0]["answers"].get<int>());
}

TEST(SharedLoader, AMalformedAddressIsAClearErrorNotACrash) {
  try {
    LoaderSampler sampler({"not-an-address"}, 0.1);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'not-an-address'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SharedLoaderClient("not-an-address", 8, 0.5), std::invalid_argument);
  EXPECT_THROW(query_loader_stats("not-an-address", 0.5), std::invalid_argument);
}

TEST(SharedLoader, ConsumersWithDifferentBatchSizesSeeTheSameSamplesInTheSameOrder) {
  testing::TempDir dir;
  // With pace fastest the one stream holds while b trails a by less than the
  // ring's slack (buffer - ahead chunks, docs/data.md): 8 chunks of 16
  // against the 50 samples b trails by. A ring of 8 (slack 4) left b
  // overrun now and then on a loaded machine.
  Producer producer(dir, 50, 16, 16);
  SharedLoaderClient a(producer.spec.address, 10), b(producer.spec.address, 25);
  a.start_reading();  // both hold the ring before either reads
  b.start_reading();
  std::vector<int64_t> la, lb;  // 150 samples each (three passes), read side by side
  for (int round = 0; round < 3; ++round) {
    for (int64_t label : labels_of(a, 5)) la.push_back(label);
    for (int64_t label : labels_of(b, 2)) lb.push_back(label);
  }
  EXPECT_EQ(la, lb);
  EXPECT_EQ(a.batches_per_epoch(), 5);
  // Each pass over the folder has every image once, in a new order.
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<int64_t> seen(la.begin() + pass * 50, la.begin() + (pass + 1) * 50);
    std::sort(seen.begin(), seen.end());
    for (int64_t i = 0; i < 50; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)], i);
  }
  EXPECT_NE(std::vector<int64_t>(la.begin(), la.begin() + 50), std::vector<int64_t>(la.begin() + 50, la.begin() + 100));
}

TEST(SharedLoader, ALateJoinerCatchesUpFromTheBuffer) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4);
  SharedLoaderClient early(producer.spec.address, 8);
  std::vector<int64_t> first = labels_of(early, 10);  // chunks 0..9 read; the ring holds 4
  SharedLoaderClient late(producer.spec.address, 8);
  std::vector<int64_t> caught = labels_of(late, 2);
  std::vector<int64_t> more = labels_of(early, 4);
  first.insert(first.end(), more.begin(), more.end());
  // The late one starts at a chunk the early one already read (from the
  // buffer), not at chunk 0 and not after the newest.
  auto at = std::search(first.begin(), first.end(), caught.begin(), caught.end());
  ASSERT_NE(at, first.end());
  int64_t chunk = (at - first.begin()) / 8;
  EXPECT_GT(chunk, 0);
  EXPECT_LE(chunk, 10);
  EXPECT_EQ((at - first.begin()) % 8, 0);
}

// The chunks the producer has published once it stops publishing more.
int64_t settled_chunks(LoaderServer& server) {
  int64_t last = -1;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const int64_t now = server.stats()["chunks"].get<int64_t>();
    if (now == last) return now;
    last = now;
  }
}

TEST(SharedLoader, AfterItsFirstRingFullTheProducerDecodesNoMoreThanAheadChunksPastTheNewestAskedFor) {
  testing::TempDir dir;
  Producer producer(dir, 40, 4, 6, {.ahead = 2});
  EXPECT_EQ(settled_chunks(*producer.server), 6);  // the ring, filled before anyone reads
  SharedLoaderClient client(producer.spec.address, 4);  // a chunk a batch
  labels_of(client, 5);  // read chunks 0-4, and asked for 5 (the next comes while it trains)
  EXPECT_EQ(settled_chunks(*producer.server), 8);  // 5 + 2 ahead, though slots for 11 are free
  EXPECT_GT(producer.server->stats()["waited_for_demand_s"].get<double>(), 0.1);
  labels_of(client, 10);
  EXPECT_EQ(settled_chunks(*producer.server), 18);  // asked for 15
}

TEST(SharedLoader, TheDataFilesAheadAndPaceAreReadAndAheadKeptWithinWhatThePaceLeaves) {
  testing::TempDir dir;
  auto spec = [&](const std::string& name, const std::string& text) {
    return parse_loader_serve_spec(dir.write(name, "root = \"x\"\nsize = 8\n" + text));
  };
  EXPECT_EQ(spec("a.toml", "buffer = 6\nahead = 3\n").ahead, 3);
  EXPECT_EQ(spec("b.toml", "buffer = 6\nahead = 50\n").ahead, 3) << "pace fastest: at most half the ring";
  EXPECT_EQ(spec("c.toml", "buffer = 6\nahead = 50\npace = \"slowest\"\n").ahead, 6) << "at most the ring";
  EXPECT_EQ(spec("d.toml", "").ahead, 8);
  EXPECT_EQ(spec("e.toml", "").pace, LoaderPace::fastest);
  EXPECT_EQ(spec("f.toml", "pace = \"slowest\"\n").pace, LoaderPace::slowest);
  for (const auto& [name, text, field] : {std::tuple{"g.toml", "ahead = 0\n", "ahead"},
                                          std::tuple{"h.toml", "pace = \"sideways\"\n", "pace"}}) {
    try {
      spec(name, text);
      ADD_FAILURE() << text << " must be refused";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

TEST(SharedLoader, EverySpellingOfADataFilesPathGivesTheSameDefaultAddress) {
  testing::TempDir dir;
  const std::string file = dir.write("data.toml", "root = \"x\"\nsize = 8\n");
  std::filesystem::create_directory(dir.file("sub"));
  std::filesystem::create_symlink(file, dir.file("link.toml"));
  const std::string address = parse_loader_serve_spec(file).address;
  EXPECT_EQ(parse_loader_serve_spec(dir.path() + "/./data.toml").address, address);
  EXPECT_EQ(parse_loader_serve_spec(dir.path() + "/sub/../data.toml").address, address);
  EXPECT_EQ(parse_loader_serve_spec(dir.file("link.toml")).address, address);
  const std::string other = dir.write("other.toml", "root = \"x\"\nsize = 8\n");
  EXPECT_NE(parse_loader_serve_spec(other).address, address);
}

TEST(SharedLoader, ADataFileWithoutThreadsDecodesOnEveryCoreItMayRunOn) {
  testing::TempDir dir;
  EXPECT_EQ(parse_loader_serve_spec(dir.write("a.toml", "root = \"x\"\nsize = 8\nthreads = 3\n")).pipeline.threads, 3);
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(parse_loader_serve_spec(dir.write("b.toml", "root = \"x\"\nsize = 8\n")).pipeline.threads,
            std::min(CPU_COUNT(&all), 256));
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // as under `taskset -c 0`
  const int64_t pinned = parse_loader_serve_spec(dir.write("c.toml", "root = \"x\"\nsize = 8\n")).pipeline.threads;
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(pinned, 1);
}

TEST(SharedLoader, ALateJoinerStartsNoFurtherBackThanItsPaceAllowsSoTheRestAbsorbsHiccups) {
  // Once the first consumer asked for chunk 15, the producer runs 2 ahead
  // (to 17) and the oldest chunk held is 2. With pace slowest a late joiner
  // starts half the ring (8) behind 15, at 7; with pace fastest near the
  // oldest chunk the ring keeps, clear of the margin in which a reader in
  // place would be moved on (its batches span up to 3 chunks; the slack,
  // 16 - 2 = 14, leaves that whole): 3 after it, 10 behind 15, at 5.
  for (auto [pace, start] : {std::pair{LoaderPace::slowest, 7}, std::pair{LoaderPace::fastest, 5}}) {
    testing::TempDir dir;
    Producer producer(dir, 80, 4, 16, {.ahead = 2, .pace = pace});
    SharedLoaderClient early(producer.spec.address, 4);  // a chunk a batch
    std::vector<int64_t> first = labels_of(early, 15);    // chunks 0-14, and asked for 15
    EXPECT_EQ(settled_chunks(*producer.server), 18);      // 15 + 2 ahead: chunks 0 and 1 are gone
    SharedLoaderClient late(producer.spec.address, 4);
    std::vector<int64_t> caught = labels_of(late, 1);
    EXPECT_EQ(caught, std::vector<int64_t>(first.begin() + 4 * start, first.begin() + 4 * start + 4))
        << (pace == LoaderPace::slowest ? "slowest" : "fastest");
  }
}

TEST(SharedLoader, AConsumerHoldsTheRingFromItsFirstBatchNotWhileItsJobStarts) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4, {.stall_s = 100});
  SharedLoaderClient starting(producer.spec.address, 8);  // connected, building its model
  SharedLoaderClient reading(producer.spec.address, 8);
  EXPECT_LT(seconds_to_read(reading, 12), 5.0);  // three times the ring
  EXPECT_EQ(producer.server->stats()["consumers_left_behind"].get<int64_t>(), 0);
  labels_of(starting, 1);  // starts at the oldest chunk still held
  // The other read chunks 0-11 through 4 slots: the oldest left is 8 or later.
  EXPECT_GE(starting.stats()["chunks_skipped"].get<int64_t>(), 8);
}

// Consumers made while it lives are in the start group of the producer
// whose ready file is `ready` ($COLO_LOADER_START_GROUP, as colo's
// scheduler sets it).
class StartGroupVariable {
 public:
  explicit StartGroupVariable(const std::string& ready) { ::setenv(kLoaderStartGroupVariable, ready.c_str(), 1); }
  ~StartGroupVariable() { ::unsetenv(kLoaderStartGroupVariable); }
};

// A consumer speaking the protocol by hand (loader_protocol.h), for what
// SharedLoaderClient never does: fall silent, or leave mid-request.
class RawConsumer {
 public:
  // Connects and says hello; `id` is what the producer called it.
  explicit RawConsumer(const std::string& address) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(address);
    send({{"op", "hello"}});
    id = receive()["consumer"].get<int64_t>();
  }
  // Sends `request`, with this consumer's id once it has one.
  void send(nlohmann::json request) {
    if (id >= 0) request["consumer"] = id;
    socket_.send(zmq::buffer(request.dump()), zmq::send_flags::none);
  }
  // The producer's next reply.
  nlohmann::json receive() {
    zmq::message_t reply;
    if (!socket_.recv(reply)) throw std::runtime_error("no reply from the producer");
    return nlohmann::json::parse(reply.to_string());
  }

  int64_t id = -1;

 private:
  zmq::context_t context_;
  zmq::socket_t socket_{context_, zmq::socket_type::dealer};
};

// The scheduler's word on how many jobs it launched into the group.
void write_start_group_size(const std::string& ready, int n) {
  write_file_atomically(start_group_size_file(ready), std::to_string(n) + "\n");
}

TEST(SharedLoader, ConsumersStartedTogetherGetTheirFirstChunksTogetherFromTheSameChunk) {
  testing::TempDir dir;
  const std::string ready = dir.file("loader.ready");
  Producer producer(dir, 40, 8, 4, {.stall_s = 100, .ready_file = ready});
  StartGroupVariable group(ready);
  SharedLoaderClient first(producer.spec.address, 8), second(producer.spec.address, 8);
  std::vector<int64_t> first_labels, second_labels;
  std::chrono::steady_clock::time_point first_got, second_got;
  std::thread reading_first([&] {
    first_labels = labels_of(first, 1);
    first_got = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the other job still sets up
  std::thread reading_second([&] {
    second_labels = labels_of(second, 1);
    second_got = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both asked; the scheduler writes the count
  const auto size_written = std::chrono::steady_clock::now();
  write_start_group_size(ready, 2);
  reading_first.join();
  reading_second.join();
  EXPECT_GE(first_got, size_written) << "held until the group was known to be all there";
  EXPECT_GE(second_got, size_written);
  EXPECT_EQ(first_labels, second_labels) << "both start at the same chunk";
  nlohmann::json stats = producer.server->stats()["start_group"];
  EXPECT_EQ(stats["size"], 2);
  EXPECT_EQ(stats["asked"], 2);
  EXPECT_EQ(stats["released"], true);
}

TEST(SharedLoader, AStartGroupWhoseOthersNeverAskHoldsItsFirstConsumerOnlyForTheWait) {
  testing::TempDir dir;
  const std::string ready = dir.file("loader.ready");
  Producer producer(dir, 40, 8, 4, {.ready_file = ready, .start_group_wait_s = 0.6});
  write_start_group_size(ready, 3);
  StartGroupVariable group(ready);
  SharedLoaderClient alone(producer.spec.address, 8);
  const double first = seconds_to_read(alone, 1);
  EXPECT_GE(first, 0.5);
  EXPECT_LT(first, 5.0);
  EXPECT_LT(seconds_to_read(alone, 1), 0.5) << "only its first chunk waited";
}

TEST(SharedLoader, WithPaceSlowestAConsumerHeldInItsStartGroupHoldsNoOneBack) {
  testing::TempDir dir;
  const std::string ready = dir.file("loader.ready");
  Producer producer(dir, 40, 8, 4,
                    {.stall_s = 0.3, .pace = LoaderPace::slowest, .ready_file = ready, .start_group_wait_s = 1.5});
  write_start_group_size(ready, 2);  // the other never comes
  std::optional<SharedLoaderClient> held;
  {
    StartGroupVariable group(ready);
    held.emplace(producer.spec.address, 8);
  }
  double held_s = 0;
  std::thread holding([&] { held_s = seconds_to_read(*held, 1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  SharedLoaderClient other(producer.spec.address, 8);  // launched later, in no group
  EXPECT_LT(seconds_to_read(other, 12), 5.0) << "three times the ring, past the held one";
  holding.join();
  EXPECT_GE(held_s, 1.3);
  EXPECT_LT(held_s, 5.0) << "served once its group's wait was over";
  EXPECT_EQ(producer.server->stats()["consumers_left_behind"].get<int64_t>(), 0);
}

TEST(SharedLoader, AStartGroupCountsJobsNotTheConsumersOfOneJob) {
  testing::TempDir dir;
  const std::string ready = dir.file("loader.ready");
  Producer producer(dir, 40, 8, 4, {.stall_s = 100, .ready_file = ready});
  write_start_group_size(ready, 2);
  StartGroupVariable group(ready);
  ::setenv("COLO_JOB_ID", "7", 1);
  SharedLoaderClient train(producer.spec.address, 8), validate(producer.spec.address, 8);
  std::atomic<int> got{0};
  std::thread reading_train([&] { labels_of(train, 1); ++got; });
  std::thread reading_validate([&] { labels_of(validate, 1); ++got; });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(got.load(), 0) << "one job of the two asked";
  ::setenv("COLO_JOB_ID", "8", 1);
  SharedLoaderClient other_job(producer.spec.address, 8);
  labels_of(other_job, 1);
  reading_train.join();
  reading_validate.join();
  ::unsetenv("COLO_JOB_ID");
  EXPECT_EQ(got.load(), 2);
  EXPECT_EQ(producer.server->stats()["start_group"]["asked"], 2);
}

TEST(SharedLoader, AStartGroupWhoseSizeDropsAsAMemberDiesIsServedThen) {
  testing::TempDir dir;
  const std::string ready = dir.file("loader.ready");
  Producer producer(dir, 40, 8, 4, {.ready_file = ready});
  write_start_group_size(ready, 2);
  StartGroupVariable group(ready);
  SharedLoaderClient survivor(producer.spec.address, 8);
  std::thread dies([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    write_start_group_size(ready, 1);  // the scheduler saw the other job end
  });
  const double first = seconds_to_read(survivor, 1);
  dies.join();
  EXPECT_GE(first, 0.4);
  EXPECT_LT(first, 5.0) << "not the 20 s wait";
}

// Jobs 2 and 3 of `ready`'s start group, which the scheduler now counts as
// two: job 2's first batch waits until job 3 has asked too (`while_waiting`
// runs meanwhile), then both are served.
void expect_job_2_waits_for_job_3(Producer& producer, const std::string& ready,
                                  const std::function<void()>& while_waiting = {}) {
  StartGroupVariable group(ready);
  ::setenv("COLO_JOB_ID", "2", 1);
  SharedLoaderClient second(producer.spec.address, 8);
  std::atomic<int> got{0};
  std::thread reading([&] { labels_of(second, 1); ++got; });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(got.load(), 0) << "one of the two jobs left has asked";
  if (while_waiting) while_waiting();
  ::setenv("COLO_JOB_ID", "3", 1);
  SharedLoaderClient third(producer.spec.address, 8);
  labels_of(third, 1);
  reading.join();
  ::unsetenv("COLO_JOB_ID");
  EXPECT_EQ(got.load(), 1);
  EXPECT_EQ(producer.server->stats()["start_group"]["asked"], 2);
}

TEST(SharedLoader, AMemberThatEndsWhileHeldInItsStartGroupNoLongerCountsAsHavingAsked) {
  // Job 1 asks for its first batch and ends while the group waits (an
  // exception at its first step, say); the scheduler writes 2 for the two
  // jobs left. Job 2 then waits for job 3, as if job 1 had never asked.
  testing::TempDir dir;
  const std::string ready = dir.file("loader.ready");
  Producer producer(dir, 40, 8, 4, {.stall_s = 100, .ready_file = ready});
  write_start_group_size(ready, 3);
  RawConsumer ended(producer.spec.address);
  ended.send({{"op", "next"}, {"seq", 0}, {"start_group", ready}, {"job", "1"}});
  ended.send({{"op", "bye"}});
  for (int i = 0; i < 200 && producer.server->stats()["consumers"].get<int64_t>() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(producer.server->stats()["consumers"].get<int64_t>(), 0) << "its bye was heard";
  EXPECT_EQ(producer.server->stats()["start_group"]["asked"], 0);
  write_start_group_size(ready, 2);
  expect_job_2_waits_for_job_3(producer, ready);
}

TEST(SharedLoader, AMemberThatCrashedAfterAskingNoLongerCountsOnceTheSchedulerNamesTheOthersOnly) {
  // Job 1 asks for its first batch and dies without a goodbye (kill -9):
  // its consumer is dropped only at the heartbeat timeout. The scheduler,
  // which saw it end, writes the two jobs left by id; job 2 then waits for
  // job 3 instead of being served with a dead job counted.
  testing::TempDir dir;
  const std::string ready = dir.file("loader.ready");
  Producer producer(dir, 40, 8, 4, {.stall_s = 100, .ready_file = ready});
  write_file_atomically(start_group_size_file(ready), start_group_size_text(std::vector<int64_t>{1, 2, 3}));
  RawConsumer crashed(producer.spec.address);
  crashed.send({{"op", "next"}, {"seq", 0}, {"start_group", ready}, {"job", "1"}});
  write_file_atomically(start_group_size_file(ready), start_group_size_text(std::vector<int64_t>{2, 3}));
  expect_job_2_waits_for_job_3(producer, ready, [&] {
    EXPECT_EQ(producer.server->stats()["consumers"].get<int64_t>(), 2) << "the crashed one is not dropped yet";
  });
}

TEST(SharedLoader, AStartGroupOfOneIsServedAtOnceAndAnotherProducersIsIgnored) {
  testing::TempDir dir;
  const std::string ready = dir.file("loader.ready");
  {
    Producer producer(dir, 40, 8, 4, {.ready_file = ready});
    StartGroupVariable group(dir.file("other.ready"));
    SharedLoaderClient consumer(producer.spec.address, 8);
    EXPECT_LT(seconds_to_read(consumer, 1), 5.0);  // not the 20 s wait
    EXPECT_EQ(producer.server->stats()["start_group"]["asked"], 0);
  }
  Producer producer(dir, 40, 8, 4, {.ready_file = ready});
  write_start_group_size(ready, 1);  // the scheduler could launch one job only in that round
  StartGroupVariable group(ready);
  SharedLoaderClient consumer(producer.spec.address, 8);
  EXPECT_LT(seconds_to_read(consumer, 1), 5.0);
  EXPECT_EQ(producer.server->stats()["start_group"]["released"], true);
}

TEST(SharedLoader, AStalledConsumerIsLeftBehindAndTheOthersGoOn) {
  // With pace slowest the others wait stall_s for it, then leave it behind;
  // with pace fastest they never wait for it.
  for (LoaderPace pace : {LoaderPace::slowest, LoaderPace::fastest}) {
    testing::TempDir dir;
    Producer producer(dir, 40, 8, 4, {.stall_s = 0.3, .pace = pace});
    SharedLoaderClient stalled(producer.spec.address, 8);
    labels_of(stalled, 1);
    SharedLoaderClient busy(producer.spec.address, 8);
    EXPECT_LT(seconds_to_read(busy, 30), 10.0);  // far more than the ring holds
    nlohmann::json stats = producer.server->stats();
    EXPECT_EQ(stats["consumers_left_behind"].get<int64_t>() >= 1, pace == LoaderPace::slowest);
    labels_of(stalled, 2);  // it comes back: skips ahead instead of reading overwritten data
    EXPECT_GT(stalled.stats()["chunks_skipped"].get<int64_t>(), 0);
  }
}

TEST(SharedLoader, SlowConsumersThatKeepNoOneWaitingAreWaitedForNotLeftBehind) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4, {.stall_s = 0.3, .pace = LoaderPace::slowest});
  SharedLoaderClient a(producer.spec.address, 8), b(producer.spec.address, 8);
  a.start_reading();
  b.start_reading();
  EXPECT_EQ(labels_of(a, 1), labels_of(b, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // both "in a long first step"
  nlohmann::json stats = producer.server->stats();
  EXPECT_EQ(stats["consumers_left_behind"].get<int64_t>(), 0);
  EXPECT_EQ(stats["chunks"].get<int64_t>(), 5) << "four slots past chunk 0, which both copied out";
  for (int batch = 0; batch < 6; ++batch) EXPECT_EQ(labels_of(a, 1), labels_of(b, 1)) << "batch " << batch;
  EXPECT_EQ(a.stats()["chunks_skipped"].get<int64_t>(), 0);
  EXPECT_EQ(b.stats()["chunks_skipped"].get<int64_t>(), 0);
}

TEST(SharedLoader, WithEveryConsumerLeftBehindTheProducerStopsUntilOneReadsAgain) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4, {.stall_s = 0.3, .pace = LoaderPace::slowest});
  SharedLoaderClient stalled(producer.spec.address, 8);
  labels_of(stalled, 1);
  {
    SharedLoaderClient busy(producer.spec.address, 8);
    labels_of(busy, 12);  // leaves `stalled` behind, then says bye
  }
  ASSERT_GE(producer.server->stats()["consumers_left_behind"].get<int64_t>(), 1);
  auto chunks_after_a_while = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    return producer.server->stats()["chunks"].get<int64_t>();
  };
  const int64_t made = chunks_after_a_while();
  EXPECT_EQ(chunks_after_a_while(), made) << "chunks decoded with no one reading";
  labels_of(stalled, 6);
  EXPECT_GT(producer.server->stats()["chunks"].get<int64_t>(), made);
}

// A mirror whose copies land only when waited for, 30 ms later, and which
// records what each slot held when its copy landed.
class SlowMirror : public RingMirror {
 public:
  void attach_host_ring(uint8_t* base, int64_t) override { attached = base; }
  void start_copy(int64_t slot, const uint8_t* data, int64_t) override {
    std::lock_guard<std::mutex> lock(mutex);
    started.push_back({slot, data, *reinterpret_cast<const int64_t*>(data)});
  }
  void wait_copies() override {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::lock_guard<std::mutex> lock(mutex);
    for (const Copy& c : started) {
      const int64_t now = *reinterpret_cast<const volatile int64_t*>(c.data);
      if (now != c.seq) ++overwritten_while_copying;
      landed[c.slot] = now;
    }
    started.clear();
  }
  nlohmann::json describe() const override { return nlohmann::json::object(); }
  int64_t landed_in(int64_t slot) {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = landed.find(slot);
    return found == landed.end() ? -1 : found->second;
  }

  struct Copy {
    int64_t slot;
    const uint8_t* data;
    int64_t seq;
  };
  std::mutex mutex;
  std::vector<Copy> started;
  std::map<int64_t, int64_t> landed;  // slot -> the chunk its copy carried
  int64_t overwritten_while_copying = 0;
  const uint8_t* attached = nullptr;
};

TEST(SharedLoader, WithAMirrorAChunkIsPublishedOnlyOnceCopiedAndItsSlotKeptUntilThen) {
  testing::TempDir dir;
  auto owned = std::make_unique<SlowMirror>();
  SlowMirror* mirror = owned.get();
  Producer producer(dir, 40, 8, 4, {}, std::move(owned));
  EXPECT_NE(mirror->attached, nullptr);
  SharedLoaderClient reader(producer.spec.address, 8);
  std::vector<int64_t> labels(8);
  for (int b = 0; b < 12; ++b) {  // 12 chunks through a ring of 4
    std::vector<RingPiece> pieces = reader.next_batch_pieces(labels.data());
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(mirror->landed_in(pieces[0].slot), pieces[0].seq) << "batch " << b << " published before its copy";
    reader.release_before(pieces[0].seq + 1);
  }
  EXPECT_EQ(mirror->overwritten_while_copying, 0);
}

// A mirror whose copies land only once the test opens it (or after 20 s),
// so that nothing is published until then.
class GatedMirror : public RingMirror {
 public:
  void attach_host_ring(uint8_t*, int64_t) override {}
  void start_copy(int64_t, const uint8_t*, int64_t) override {}
  void wait_copies() override {
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait_for(lock, std::chrono::seconds(20), [&] { return open_; });
  }
  nlohmann::json describe() const override { return nlohmann::json::object(); }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// A mirror whose copies land at once, and whose device reports a fatal
// error once the test says so.
class FaultingMirror : public RingMirror {
 public:
  void attach_host_ring(uint8_t*, int64_t) override {}
  void start_copy(int64_t, const uint8_t*, int64_t) override {}
  void wait_copies() override {}
  nlohmann::json describe() const override { return nlohmann::json::object(); }
  std::string fault() const override { return faulted ? "an illegal memory access was encountered" : ""; }
  std::atomic<bool> faulted{false};
};

TEST(SharedLoader, AFatalErrorOnItsGpuEndsEvenAnIdleProducerNamingTheError) {
  testing::TempDir dir;
  auto owned = std::make_unique<FaultingMirror>();
  FaultingMirror* mirror = owned.get();
  Producer producer(dir, 40, 4, 4, {.ahead = 2}, std::move(owned));
  {
    SharedLoaderClient reader(producer.spec.address, 4);
    std::vector<int64_t> labels(4);
    reader.next_batch_pieces(labels.data());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // idle: its ring full, no one reading
  EXPECT_FALSE(producer.ended) << producer.failure;
  mirror->faulted = true;
  for (int tries = 0; tries < 250 && !producer.ended; ++tries) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(producer.ended) << "an idle producer went on serving after its GPU faulted";
  EXPECT_NE(producer.failure.find("fatal error (an illegal memory access was encountered)"), std::string::npos)
      << producer.failure;
}

TEST(SharedLoader, TheProducerWritesItsReadyFileOnceItHasPublishedItsFirstRingFull) {
  testing::TempDir dir;
  auto owned = std::make_unique<GatedMirror>();
  GatedMirror* gate = owned.get();
  const std::string ready = dir.file("producer.ready");
  Producer producer(dir, 40, 4, 6, {.ready_file = ready}, std::move(owned));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // chunks decoded, none published
  EXPECT_EQ(producer.server->stats()["chunks"].get<int64_t>(), 0);
  EXPECT_FALSE(path_exists(ready)) << "written before its ring was full";
  gate->open();
  for (int tries = 0; tries < 500 && !path_exists(ready); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(path_exists(ready));
  nlohmann::json written = nlohmann::json::parse(read_file(ready));
  EXPECT_GE(written["chunks"].get<int64_t>(), 6);
  EXPECT_EQ(written["buffer_slots"].get<int64_t>(), 6);
  EXPECT_GT(written["unix_s"].get<double>(), 1.7e9);
  EXPECT_GE(producer.server->stats()["chunks"].get<int64_t>(), 6);
}

// One batch read in place from the host ring: its labels, and each sample's
// first pixel (image i is a flat grey of value i, so a pixel names its image).
struct InPlaceBatch {
  std::vector<int64_t> labels;
  std::vector<int> first_pixels;
  std::vector<RingPiece> pieces;
};
InPlaceBatch read_in_place(SharedLoaderClient& client) {
  InPlaceBatch batch;
  batch.labels.resize(static_cast<size_t>(client.batch_size()));
  batch.pieces = client.next_batch_pieces(batch.labels.data());
  for (const RingPiece& p : batch.pieces) {
    for (int64_t i = 0; i < p.count; ++i) {
      const uint8_t* sample = client.host_slot(p.slot) + client.pixels_offset() + (p.first + i) * client.sample_bytes();
      batch.first_pixels.push_back(sample[0]);
    }
  }
  return batch;
}

TEST(SharedLoader, AnInPlaceReaderAsksForItsNextChunkOnceItHasReadOneWhereTheRingHasRoom) {
  // A chunk a batch, so a batch spans at most 3 chunks: a ring of 8 holds
  // two batches' and the one asked for, with a slot to spare; one of 6 does not.
  for (auto [buffer, prefetches] : {std::pair{8, true}, std::pair{6, false}}) {
    testing::TempDir dir;
    Producer producer(dir, 80, 4, buffer, {.ahead = 2});
    SharedLoaderClient reader(producer.spec.address, 4);
    EXPECT_EQ(reader.prefetches_in_place(), prefetches);
    for (int b = 0; b < 7; ++b) {
      InPlaceBatch batch = read_in_place(reader);
      ASSERT_EQ(batch.pieces.size(), 1u);
      EXPECT_EQ(batch.pieces[0].seq, b);
      reader.release_before(b + 1);
    }
    // Chunks 0-6 read: asked for 7 already (7 + 2 ahead), or not yet (6 + 2).
    EXPECT_EQ(settled_chunks(*producer.server), prefetches ? 10 : 9) << "ring of " << buffer;
    EXPECT_EQ(read_in_place(reader).pieces[0].seq, 7) << "the chunk asked for ahead is the next read";
  }
}

TEST(SharedLoader, ConsumersReadingInPlaceSeeTheSameSamplesAsThoseThatCopy) {
  testing::TempDir dir;
  Producer producer(dir, 50, 16, 8);
  SharedLoaderClient copying(producer.spec.address, 10), in_place(producer.spec.address, 10);
  copying.start_reading();
  in_place.start_reading();
  EXPECT_TRUE(in_place.device_ring().is_null()) << "a producer without `device` keeps no device ring";
  for (int b = 0; b < 12; ++b) {
    std::vector<int64_t> copied = labels_of(copying, 1);
    InPlaceBatch read = read_in_place(in_place);
    ASSERT_EQ(read.labels, copied) << "batch " << b;
    for (size_t i = 0; i < read.labels.size(); ++i) {
      EXPECT_NEAR(read.first_pixels[i], read.labels[i], 3) << "sample " << i << " of batch " << b;
    }
    in_place.release_before(read.pieces.front().seq);
  }
}

TEST(SharedLoader, LateJoinersThatReadInPlaceAndThatCopyStartAtTheSameChunk) {
  // Pace fastest. A late joiner starts behind the newest chunk asked for;
  // one reading in place must not start so far back that its batch's
  // chunks reach the margin before the producer's decode window, nor be
  // moved on while it reads at the others' pace a batch behind, or the two
  // read different streams. A ring of 8, ahead 4, batches spanning up to 3
  // chunks (little slack: no margin); a ring of 16, ahead 8, up to 3 (a
  // margin of 3, which a start an eighth of the slack in would be within).
  struct Setup {
    int64_t buffer, ahead, chunk, batch;
  };
  for (Setup setup : {Setup{8, 4, 16, 24}, Setup{16, 8, 8, 16}}) {
    testing::TempDir dir;
    Producer producer(dir, 200, setup.chunk, setup.buffer, {.ahead = setup.ahead});
    {
      SharedLoaderClient first(producer.spec.address, 8);
      labels_of(first, 3 * setup.buffer * setup.chunk / 8);  // three rings' worth read
    }
    SharedLoaderClient copying(producer.spec.address, setup.batch), in_place(producer.spec.address, setup.batch);
    copying.start_reading();
    in_place.start_reading();
    for (int b = 0; b < 12; ++b) {
      std::vector<int64_t> copied = labels_of(copying, 1);
      InPlaceBatch read = read_in_place(in_place);
      ASSERT_EQ(read.labels, copied) << "ring of " << setup.buffer << ", batch " << b;
      in_place.release_before(read.pieces.back().seq);
    }
    // Both skipped the chunks the ring held on connecting, behind where they started; none since.
    EXPECT_EQ(in_place.stats()["chunks_skipped"], copying.stats()["chunks_skipped"]) << "ring of " << setup.buffer;
  }
}

TEST(SharedLoader, AnInPlaceConsumerHoldsItsChunksUntilItReleasesThem) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4, {.stall_s = 100, .pace = LoaderPace::slowest});
  SharedLoaderClient in_place(producer.spec.address, 8);
  read_in_place(in_place);
  read_in_place(in_place);  // chunks 0 and 1 read, not released
  auto chunks_after_a_while = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    return producer.server->stats()["chunks"].get<int64_t>();
  };
  EXPECT_EQ(chunks_after_a_while(), 4) << "four slots, the oldest two held";
  in_place.release_before(2);
  EXPECT_EQ(chunks_after_a_while(), 6) << "chunks 0 and 1 handed back; 2 and 3 not read yet";
}

TEST(SharedLoader, WithPaceFastestAnInPlaceConsumerHoldsBackOnlyTheChunksItReadAndHasNotReleased) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4, {.stall_s = 100});
  SharedLoaderClient in_place(producer.spec.address, 8), fast(producer.spec.address, 8);
  in_place.start_reading();  // asked before it was known to read in place
  read_in_place(in_place);   // chunk 0 read, not released
  std::atomic<int> read{0};
  std::thread fast_reader([&] {
    for (int b = 0; b < 12; ++b) {
      labels_of(fast, 1);
      ++read;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(read.load(), 4) << "chunk 4 takes the slot of chunk 0, still held";
  // From another thread, as DeviceRingReader's once its copies are made:
  // the heartbeat thread tells the producer. Neither it nor a reply it has
  // not read holds chunk 1 or later.
  std::thread([&] { in_place.release_soon(1); }).join();
  fast_reader.join();
  EXPECT_EQ(read.load(), 12);
  EXPECT_EQ(producer.server->stats()["consumers_left_behind"].get<int64_t>(), 0);
  InPlaceBatch next = read_in_place(in_place);  // chunk 1 is long gone: it starts again further on
  EXPECT_GT(next.pieces.front().seq, 1);
  EXPECT_GT(in_place.stats()["chunks_skipped"].get<int64_t>(), 0);
}

TEST(SharedLoader, TheFastestConsumerWaitsForTheSlowestOnlyWithPaceSlowest) {
  for (LoaderPace pace : {LoaderPace::slowest, LoaderPace::fastest}) {
    testing::TempDir dir;
    Producer producer(dir, 40, 8, 4, {.stall_s = 100, .pace = pace});
    SharedLoaderClient slow(producer.spec.address, 8), fast(producer.spec.address, 8);
    slow.start_reading();
    fast.start_reading();
    std::atomic<int> slow_read{0};
    int slow_read_when_fast_done = -1;
    std::vector<int64_t> fast_labels;
    std::thread fast_reader([&] {
      fast_labels = labels_of(fast, 16);
      slow_read_when_fast_done = slow_read.load();
    });
    std::vector<int64_t> slow_labels;
    for (int b = 0; b < 16; ++b) {  // a consumer that trains 30 ms a step
      for (int64_t label : labels_of(slow, 1)) slow_labels.push_back(label);
      ++slow_read;
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    fast_reader.join();
    const char* name = pace == LoaderPace::slowest ? "slowest" : "fastest";
    EXPECT_EQ(producer.server->stats()["consumers_left_behind"].get<int64_t>(), 0) << name;
    if (pace == LoaderPace::slowest) {  // a ring (4) and the chunk it waits for ahead at most
      EXPECT_EQ(fast_labels, slow_labels);
      EXPECT_GE(slow_read_when_fast_done, 16 - 5);
    } else {  // it never waited for the slow one, which skipped what it could not keep up with
      EXPECT_LE(slow_read_when_fast_done, 8);
      EXPECT_GT(slow.stats()["chunks_skipped"].get<int64_t>(), 0);
    }
  }
}

// A producer of `images` images in chunks of 8, a ring of 16, ahead 8 and
// pace fastest, and two consumers of batches of 8 (one to read slowly, one
// fast) that hold the ring from the start.
struct SlowAndFast {
  SlowAndFast(int64_t images, double stall_s)
      : producer(dir, images, 8, 16, {.stall_s = stall_s, .ahead = 8}),
        slow(producer.spec.address, 8),
        fast(producer.spec.address, 8) {
    slow.start_reading();
    fast.start_reading();
  }
  testing::TempDir dir;
  Producer producer;
  SharedLoaderClient slow, fast;
};

TEST(SharedLoader, WithPaceFastestASlowInPlaceReaderDoesNotHoldTheFasterOnesToItsPace) {
  // A slow job reading the ring in place (as GPU consumers do) is never
  // silent long enough to be left behind: it releases a chunk every step.
  // Served the chunk whose slot the producer wants next, it would hold the
  // fast one to its own pace, chunk after chunk (4 jobs, ResNet-18 beside
  // ResNet-50: the ResNet-18s trained at the ResNet-50s' pace and waited 54%).
  SlowAndFast readers(80, 3);
  SharedLoaderClient &slow = readers.slow, &fast = readers.fast;
  std::atomic<int> slow_read{0};
  int slow_read_when_fast_done = -1;
  std::thread fast_reader([&] {
    for (int b = 0; b < 64; ++b) {
      InPlaceBatch batch = read_in_place(fast);
      fast.release_before(batch.pieces.back().seq + 1);
    }
    slow_read_when_fast_done = slow_read.load();
  });
  for (int b = 0; b < 24; ++b) {  // a consumer that trains 30 ms a step, holding its chunk meanwhile
    InPlaceBatch batch = read_in_place(slow);
    for (size_t i = 0; i < batch.labels.size(); ++i) {
      EXPECT_NEAR(batch.first_pixels[i], batch.labels[i], 3) << "sample " << i << " of batch " << b;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    slow.release_before(batch.pieces.back().seq + 1);
    ++slow_read;
  }
  fast_reader.join();
  EXPECT_LE(slow_read_when_fast_done, 16) << "the fast reader read 64 chunks while the slow one read 24";
  EXPECT_GT(slow.stats()["chunks_skipped"].get<int64_t>(), 0);
  EXPECT_EQ(fast.stats()["chunks_skipped"].get<int64_t>(), 0);
  EXPECT_EQ(readers.producer.server->stats()["consumers_left_behind"].get<int64_t>(), 0);
}

TEST(SharedLoader, AnInPlaceReaderNearTheDecodeWindowIsMovedOnBeforeItsHeldChunksAreWanted) {
  // Ring of 16, ahead 8: the fast consumer has asked for chunk 8, so the
  // producer wants slots up to chunk 16's (chunk 0's). The slow one asks
  // for chunk 2, whose slot chunk 18 takes: not wanted yet, but within the
  // batch it is about to hold (span 3). Given chunk 2, it would hold the
  // fast one up while it read it (MobileNetV3 jobs at batch 64 beside 192
  // waited 11-13% for it); it goes on from the newest chunk asked for.
  SlowAndFast readers(200, 100);
  SharedLoaderClient &slow = readers.slow, &fast = readers.fast;
  ASSERT_TRUE(slow.prefetches_in_place());
  ASSERT_EQ(slow.chunks_per_batch(), 3);
  EXPECT_EQ(read_in_place(slow).pieces.front().seq, 0);  // and asks for chunk 1 at once
  slow.release_before(1);
  labels_of(fast, 8);  // chunks 0-7 read, 8 asked for
  EXPECT_EQ(read_in_place(slow).pieces.front().seq, 1);  // answered before; now asks for 2
  slow.release_before(2);
  // The newest chunk asked for (8) once published, else the newest published.
  InPlaceBatch moved = read_in_place(slow);
  const int64_t seq = moved.pieces.front().seq;
  EXPECT_GT(seq, 2) << "moved on, not given chunk 2";
  EXPECT_LE(seq, 8);
  EXPECT_EQ(slow.stats()["chunks_skipped"].get<int64_t>(), seq - 2);
  for (size_t i = 0; i < moved.labels.size(); ++i) EXPECT_NEAR(moved.first_pixels[i], moved.labels[i] % 256, 3);
}

TEST(SharedLoader, AnInPlaceConsumerLeftBehindSkipsItsOverwrittenChunkInsteadOfReadingIt) {
  // In a ring of 16 it has also been answered chunk 1 ahead (prefetches_in_place),
  // which is overwritten too by the time it reads it.
  for (int64_t buffer : {4, 16}) {
    testing::TempDir dir;
    Producer producer(dir, 40, 8, buffer, {.stall_s = 0.3});
    SharedLoaderClient stalled(producer.spec.address, 4);
    read_in_place(stalled);  // half of chunk 0 read; chunk 0 held
    EXPECT_EQ(stalled.prefetches_in_place(), buffer == 16);
    SharedLoaderClient busy(producer.spec.address, 8);
    EXPECT_LT(seconds_to_read(busy, 2 * buffer + 22), 10.0) << "ring of " << buffer;
    EXPECT_GE(producer.server->stats()["consumers_left_behind"].get<int64_t>(), 1) << "ring of " << buffer;
    for (int b = 0; b < 4; ++b) {
      InPlaceBatch read = read_in_place(stalled);
      for (size_t i = 0; i < read.labels.size(); ++i) EXPECT_NEAR(read.first_pixels[i], read.labels[i], 3);
    }
    EXPECT_GT(stalled.stats()["chunks_skipped"].get<int64_t>(), 0) << "ring of " << buffer;
  }
}

TEST(SharedLoader, InPlaceConsumersWhoseBatchesSpanManyChunksReleaseBeforeAskingAndNeverStall) {
  testing::TempDir dir;
  // 300 images: each pass ends in a short chunk, so batches of 128 start
  // unaligned and span up to 6 chunks of 32; the ring holds 8.
  Producer producer(dir, 300, 32, 8);
  std::vector<std::thread> consumers;
  std::atomic<int> finished{0};
  auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < 4; ++c) {
    consumers.emplace_back([&] {
      SharedLoaderClient client(producer.spec.address, 128);
      ASSERT_LT(client.chunks_per_batch(), client.slots());
      for (int b = 0; b < 40; ++b) {
        client.release_before(client.current_chunk());  // as DeviceRingReader does once its copies are made
        InPlaceBatch read = read_in_place(client);
        for (size_t i = 0; i < read.labels.size(); i += 17) ASSERT_NEAR(read.first_pixels[i], read.labels[i] % 256, 3);
      }
      ++finished;
    });
  }
  for (auto& t : consumers) t.join();
  EXPECT_EQ(finished.load(), 4);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 4.0)
      << "no consumer waited out the producer's stall_s";
  EXPECT_EQ(producer.server->stats()["consumers_left_behind"].get<int64_t>(), 0);
}

TEST(SharedLoader, ABatchLargerThanTheRingIsNormalisedThroughACopyInsteadOfStoppingTheProducer) {
  testing::TempDir dir;
  // A ring of 4 chunks of 16 (64 samples) and batches of 100: read in
  // place, a batch would hold more chunks than the ring has.
  Producer producer(dir, 50, 16, 4, {.stall_s = 1});
  SharedLoaderClient client(producer.spec.address, 100);
  ASSERT_FALSE(client.batch_fits_in_place());
  std::vector<float> pixels(100 * 3 * 8 * 8);
  std::vector<int64_t> labels(100);
  const std::vector<float> scale(3, 1.0f), shift(3, 0.0f);
  auto start = std::chrono::steady_clock::now();
  for (int b = 0; b < 3; ++b) {
    client.next_batch_normalised(pixels.data(), labels.data(), scale.data(), shift.data());
    for (size_t i = 0; i < labels.size(); ++i) {
      ASSERT_NEAR(pixels[i * 3 * 8 * 8], static_cast<float>(labels[i]), 3) << "sample " << i << " of batch " << b;
    }
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0)
      << "no batch waited out the producer's stall_s";
  EXPECT_EQ(client.stats()["batches"].get<int64_t>(), 3);
  EXPECT_EQ(producer.server->stats()["consumers_left_behind"].get<int64_t>(), 0);
}

TEST(SharedLoader, ASilentConsumerIsDroppedAndTheOthersGoOn) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4, {.stall_s = 100, .heartbeat_timeout_s = 0.5});
  RawConsumer silent(producer.spec.address);
  // It asks for chunk 0 to read in place, so holds the ring, and is never heard from again.
  silent.send({{"op", "next"}, {"seq", 0}, {"keep", 0}});
  SharedLoaderClient busy(producer.spec.address, 8);
  labels_of(busy, 20);
  EXPECT_EQ(producer.server->stats()["consumers_dropped"].get<int64_t>(), 1);
  EXPECT_EQ(producer.server->stats()["consumers"].get<int64_t>(), 1);
}

TEST(SharedLoader, ARequestWithAFieldOfTheWrongTypeIsAnsweredWithAnErrorAndTheProducerGoesOn) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4);
  RawConsumer wrong(producer.spec.address);
  wrong.send({{"op", "next"}, {"seq", "zero"}});
  nlohmann::json reply = wrong.receive();
  EXPECT_EQ(reply["op"], "error");
  EXPECT_NE(reply["message"].get<std::string>().find("\"seq\" must be an integer"), std::string::npos) << reply;
  wrong.send({{"op", "bye"}, {"samples", "many"}});
  EXPECT_NE(wrong.receive()["message"].get<std::string>().find("\"samples\" must be a number"), std::string::npos);
  wrong.send({{"op", "hold"}, {"seconds", "a minute"}});
  EXPECT_NE(wrong.receive()["message"].get<std::string>().find("\"seconds\" must be a number"), std::string::npos);
  SharedLoaderClient reader(producer.spec.address, 8);
  EXPECT_EQ(labels_of(reader, 6).size(), 48u) << "the producer still serves";
}

TEST(SharedLoader, AHeldProducerCountsAsReadAndDoesNotExitIdleUntilTheHoldEnds) {
  // A scheduler launching jobs on a producer another started holds it until
  // they connect: idle, it would exit (or its scheduler stop it) first.
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4, {.idle_exit_s = 0.2});
  {
    SharedLoaderClient gone(producer.spec.address, 8);  // consumers came, and all left
    labels_of(gone, 1);
  }
  std::optional<double> held = hold_loader(producer.spec.address, 1.0, 2.0);
  ASSERT_TRUE(held.has_value());
  EXPECT_GT(*held, 0.8);
  EXPECT_LE(*held, 1.0);
  EXPECT_GT(query_loader_stats(producer.spec.address, 2.0).value()["held_s"].get<double>(), 0.5);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(query_loader_stats(producer.spec.address, 2.0).has_value()) << "idle for 0.6 s, but held";
  bool exited = false;
  for (int i = 0; i < 100 && !exited; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    exited = !query_loader_stats(producer.spec.address, 0.2).has_value();
  }
  EXPECT_TRUE(exited) << "the hold over, it exits idle";

  testing::TempDir other_dir;
  Producer other(other_dir, 40, 8, 4);
  EXPECT_NEAR(hold_loader(other.spec.address, 1e9, 2.0).value(), 600, 1) << "at most 600 s";
  other.stop();
  EXPECT_FALSE(hold_loader(other.spec.address, 1, 0.3).has_value()) << "no producer, no hold";
}

TEST(SharedLoader, ASecondProducerAtTheSameAddressIsRefusedAndTheFirstServesOn) {
  // Binding an ipc:// address takes it over: the first producer would go on
  // serving its consumers, and no new one could reach it.
  testing::TempDir dir;
  Producer first(dir, 40, 8, 4);
  SharedLoaderClient early(first.spec.address, 8);
  labels_of(early, 2);
  try {
    LoaderServer second(first.spec);
    ADD_FAILURE() << "a second producer bound " << first.spec.address;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("a producer already serves " + first.spec.address), std::string::npos)
        << e.what();
  }
  SharedLoaderClient late(first.spec.address, 8);  // new consumers still reach the first
  EXPECT_EQ(labels_of(late, 2).size(), 16u);
  EXPECT_EQ(labels_of(early, 2).size(), 16u);
}

TEST(SharedLoader, AProducerThatStopsIsAClearErrorNotAHang) {
  testing::TempDir dir;
  Producer producer(dir, 40, 8, 4);
  SharedLoaderClient client(producer.spec.address, 8, /*timeout_s=*/1.0);
  labels_of(client, 2);
  producer.stop();
  auto start = std::chrono::steady_clock::now();
  try {
    labels_of(client, 20);
    ADD_FAILURE() << "reading past the buffer with no producer must throw";
  } catch (const ProducerLost& e) {
    EXPECT_NE(std::string(e.what()).find(producer.spec.address), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_THROW(SharedLoaderClient(producer.spec.address, 8, 0.5), ProducerLost);
}

}  // namespace
}  // namespace colo::data
