#include "colo/dist/param_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <ATen/ATen.h>

#include "colo/core/tcp_port.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/int8_codec.h"
#include "colo/dist/ps_transport.h"

namespace colo::dist {
namespace {

// One asynchronous server on the CPU, SGD without momentum, its payloads
// through ZeroMQ; run in a thread until every worker says it is done.
class TestServer {
 public:
  explicit TestServer(const ParamServerOptions& options, int64_t workers = 1)
      : rendezvous_(Membership{0, 1, "tcp://127.0.0.1:" + std::to_string(free_tcp_port())},
                    std::chrono::seconds(10)) {
    spec_.workers = workers;
    spec_.servers = 1;
    spec_.timeout_s = 30;
    spec_.param_server = options;
    spec_.train.optimizer.name = "sgd";
    spec_.train.optimizer.lr = 0.1;
    spec_.train.optimizer.momentum = 0;
    thread_ = std::thread([this] {
      try {
        report_ = run_param_server(spec_, rendezvous_, 0, at::kCPU);
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~TestServer() {
    if (thread_.joinable()) thread_.join();
  }

  // Polls: a store get() would hold the store's lock while it waits, and
  // the server's thread needs it to publish the address.
  std::string address() {
    while (!rendezvous_.has(server_address_key(0))) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return rendezvous_.get(server_address_key(0));
  }
  // Joins the server and gives its report; rethrows what it threw.
  ServerReport join() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
    return report_;
  }

 private:
  ClusterSpec spec_;
  Rendezvous rendezvous_;
  std::thread thread_;
  std::exception_ptr error_;
  ServerReport report_;
};

Message message(MessageType type, int worker = 0) {
  Message m;
  m.type = type;
  m.worker = worker;
  return m;
}

ParamServerOptions compressed() {
  ParamServerOptions options;
  options.compression = "bf16";
  return options;
}

// Worker 0 starts the server from `size` zeros (SGD without momentum keeps
// no other state); every worker that said hello is then answered.
void start_from_zeros(ServerLink& worker0, int64_t size) {
  Message init = message(MessageType::kInit);
  init.payload = at::zeros({size});
  worker0.send(init);
}

// Worker `worker`'s link, after its hello (from another host: payloads
// through the transport) and the server's welcome.
std::unique_ptr<ServerLink> say_hello(TestServer& server, int worker, int64_t size) {
  auto link = std::make_unique<ServerLink>(server.address(), worker, "server 0");
  Message hello = message(MessageType::kHello, worker);
  hello.count = size;
  hello.blob = "another-host\ncpu";
  link->send(hello);
  EXPECT_EQ(link->receive(30).type, MessageType::kWelcome);
  return link;
}

// One worker of a compressed server: starts it from `start`, then pushes
// `push_of(step)` (decoded as the server applies it by `floats`) for `steps`
// steps under SGD at lr 0.1, adding each reply (decoded by `floats`) to what
// it holds. Gives what it holds, what the server's parameters should be, and
// the worst error of the first against the last change.
struct HeldParameters {
  at::Tensor held, expected;
  double worst_ratio = 0;
};

void push_and_hold(ServerLink& link, const at::Tensor& start, int64_t steps,
                   const std::function<at::Tensor(int64_t)>& push_of,
                   const std::function<at::Tensor(const at::Tensor&)>& floats, at::ScalarType reply_type,
                   HeldParameters& out) {
  Message init = message(MessageType::kInit);
  init.payload = start.clone();
  link.send(init);
  Message first = link.receive(30);
  ASSERT_EQ(first.type, MessageType::kParams);
  ASSERT_EQ(first.payload.scalar_type(), at::kFloat);  // the first reply is whole
  out.held = first.payload.clone();
  EXPECT_TRUE(out.held.equal(start));
  out.expected = start.clone();
  for (int64_t step = 0; step < steps; ++step) {
    Message push = message(MessageType::kPush);
    push.step = step;
    push.lr = 0.1;
    push.payload = push_of(step);
    link.send(push);
    Message reply = link.receive(30);
    ASSERT_EQ(reply.type, MessageType::kParams);
    ASSERT_EQ(reply.payload.scalar_type(), reply_type);
    at::Tensor before = out.expected.clone();
    out.expected.sub_(floats(push.payload) * 0.1);
    out.held.add_(floats(reply.payload));
    double change = (out.expected - before).abs().max().item<double>();
    out.worst_ratio = std::max(out.worst_ratio, (out.held - out.expected).abs().max().item<double>() / change);
  }
}

// The worker holds the server's parameters to within one bfloat16 rounding
// of the last change (the server sends what the last reply's rounding left
// out too), not of the parameters themselves, and that error does not grow
// over many steps; the pushed bfloat16 gradients are applied as sent.
TEST(ParamServer, CompressedRepliesKeepTheWorkerWithinOneRoundingOfTheLastChange) {
  const int64_t size = 4096;
  TestServer server(compressed());
  auto link = say_hello(server, 0, size);
  ASSERT_EQ(FlatOptimizer::moment_buffers(train::OptimizerSpec{"sgd", 0.1}), 0);

  at::manual_seed(3);
  HeldParameters run;
  push_and_hold(
      *link, at::randn({size}) * 4, 300,
      [&](int64_t step) { return (at::randn({size}) * (1 + step % 7)).to(at::kBFloat16); },
      [](const at::Tensor& payload) { return payload.to(at::kFloat); }, at::kBFloat16, run);
  // bfloat16 keeps 8 significant bits: a rounding is at most 2^-9 of what
  // is rounded; the change plus the carried residual stays below 2x it.
  EXPECT_LT(run.worst_ratio, std::ldexp(1.0, -8));
  // Rounding the parameters themselves would be off by up to 2^-9 of them.
  EXPECT_LT((run.held - run.expected).abs().max().item<double>(),
            run.expected.abs().max().item<double>() * std::ldexp(1.0, -12));

  Message snapshot = message(MessageType::kSnapshot);
  link->send(snapshot);
  Message state = link->receive(30);
  ASSERT_EQ(state.type, MessageType::kState);
  EXPECT_TRUE(at::allclose(state.payload, run.expected, 1e-5, 1e-5));
  link->send(message(MessageType::kDone));
  server.join();
}

// With int8: the pushes' codes are unpacked as sent, and the worker holds
// the server's parameters to within half a code step of the last change
// (a run's largest change / 254), not of the parameters: the server carries
// what each reply's codes left out into the next.
TEST(ParamServer, Int8RepliesKeepTheWorkerWithinHalfACodeOfTheLastChange) {
  const int64_t size = 6000;
  ParamServerOptions options;
  options.compression = "int8";
  TestServer server(options);
  auto link = say_hello(server, 0, size);

  at::manual_seed(4);
  HeldParameters run;
  push_and_hold(
      *link, at::randn({size}) * 4, 200,
      [&](int64_t step) { return pack_int8(at::randn({size}) * (1 + step % 5)); },
      [&](const at::Tensor& payload) { return unpack_int8(payload, size, at::kCPU); }, at::kByte, run);
  // Half a code of the change plus the carried remainder: under 1/127 of it.
  EXPECT_LT(run.worst_ratio, 1.0 / 127);
  link->send(message(MessageType::kDone));
  server.join();
}

// Worker 0 pulls, worker 1 then pushes twice: worker 0's gradient is two
// updates old. With staleness_lr it moves the parameters by lr / 2, without
// by lr; fresh gradients always by lr.
TEST(ParamServer, AStaleGradientStepsLrOverItsStalenessWithStalenessLr) {
  for (bool staleness_lr : {false, true}) {
    const int64_t size = 64;
    ParamServerOptions options;
    options.staleness_lr = staleness_lr;
    TestServer server(options, 2);
    auto first = say_hello(server, 0, size);
    auto second = say_hello(server, 1, size);
    start_from_zeros(*first, size);
    ASSERT_EQ(first->receive(30).type, MessageType::kParams);   // pulled at update 0
    ASSERT_EQ(second->receive(30).type, MessageType::kParams);
    auto push = [&](ServerLink& link, int worker, float value) {
      Message m = message(MessageType::kPush, worker);
      m.lr = 0.1;
      m.payload = at::full({size}, value);
      link.send(m);
      return link.receive(30);
    };
    push(*second, 1, 1.0f);  // fresh: staleness 0
    push(*second, 1, 1.0f);  // fresh: staleness 0
    Message after = push(*first, 0, 1.0f);  // two updates old
    const float expected = staleness_lr ? -0.25f : -0.3f;
    EXPECT_TRUE(at::allclose(after.payload, at::full({size}, expected), 1e-6, 1e-6))
        << "staleness_lr " << staleness_lr << ": " << after.payload[0].item<float>();
    first->send(message(MessageType::kDone, 0));
    second->send(message(MessageType::kDone, 1));
    server.join();
  }
}

// The messages are the same with overlap or without: the worker takes each
// reply before its next push. With overlap its gradient was computed on the
// parameters of the reply before that one, so each push after the first is
// one update staler than the server would otherwise count.
TEST(ParamServer, WithOverlapAGradientIsStaleSinceTheReplyBeforeTheLast) {
  for (bool overlap : {false, true}) {
    const int64_t size = 16;
    ParamServerOptions options;
    options.overlap = overlap;
    TestServer server(options);
    auto link = say_hello(server, 0, size);
    start_from_zeros(*link, size);
    ASSERT_EQ(link->receive(30).type, MessageType::kParams);
    for (int step = 0; step < 3; ++step) {
      Message push = message(MessageType::kPush);
      push.step = step;
      push.lr = 0.1;
      push.payload = at::ones({size});
      link->send(push);
      ASSERT_EQ(link->receive(30).type, MessageType::kParams);
    }
    link->send(message(MessageType::kDone));
    ServerReport report = server.join();
    EXPECT_EQ(report.pushes, 3);
    EXPECT_EQ(report.staleness_sum, overlap ? 2 : 0) << "overlap " << overlap;  // 0, 1, 1 with overlap
  }
}

}  // namespace
}  // namespace colo::dist
