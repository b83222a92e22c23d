#include "colo/dist/param_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <string>
#include <thread>

#include <ATen/ATen.h>

#include "colo/core/tcp_port.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/ps_transport.h"

namespace colo::dist {
namespace {

// One asynchronous server on the CPU for one worker, SGD without momentum,
// its payloads through ZeroMQ as bfloat16; run in a thread until the worker
// says it is done.
class CompressedServer {
 public:
  CompressedServer()
      : rendezvous_(Membership{0, 1, "tcp://127.0.0.1:" + std::to_string(free_tcp_port())},
                    std::chrono::seconds(10)) {
    spec_.workers = 1;
    spec_.servers = 1;
    spec_.timeout_s = 30;
    spec_.param_server.mode = "async";
    spec_.param_server.compression = "bf16";
    spec_.train.optimizer.name = "sgd";
    spec_.train.optimizer.lr = 0.1;
    spec_.train.optimizer.momentum = 0;
    thread_ = std::thread([this] {
      try {
        run_param_server(spec_, rendezvous_, 0, at::kCPU);
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~CompressedServer() {
    if (thread_.joinable()) thread_.join();
  }

  // Polls: a store get() would hold the store's lock while it waits, and
  // the server's thread needs it to publish the address.
  std::string address() {
    while (!rendezvous_.has(server_address_key(0))) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return rendezvous_.get(server_address_key(0));
  }
  // Joins the server; rethrows what it threw.
  void join() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  ClusterSpec spec_;
  Rendezvous rendezvous_;
  std::thread thread_;
  std::exception_ptr error_;
};

Message message(MessageType type) {
  Message m;
  m.type = type;
  m.worker = 0;
  return m;
}

// The worker holds the server's parameters to within one bfloat16 rounding
// of the last change (the server sends what the last reply's rounding left
// out too), not of the parameters themselves, and that error does not grow
// over many steps; the pushed bfloat16 gradients are applied as sent.
TEST(ParamServer, CompressedRepliesKeepTheWorkerWithinOneRoundingOfTheLastChange) {
  const int64_t size = 4096;
  CompressedServer server;
  ServerLink link(server.address(), 0, "server 0");
  Message hello = message(MessageType::kHello);
  hello.count = size;
  hello.blob = "another-host\ncpu";
  link.send(hello);
  ASSERT_EQ(link.receive(30).type, MessageType::kWelcome);

  at::manual_seed(3);
  at::Tensor start = at::randn({size}) * 4;
  Message init = message(MessageType::kInit);
  init.payload = start.clone();
  ASSERT_EQ(FlatOptimizer::moment_buffers(train::OptimizerSpec{"sgd", 0.1}), 0);
  link.send(init);
  Message first = link.receive(30);
  ASSERT_EQ(first.type, MessageType::kParams);
  ASSERT_EQ(first.payload.scalar_type(), at::kFloat);  // the first reply is whole
  at::Tensor held = first.payload.clone();
  EXPECT_TRUE(held.equal(start));

  at::Tensor expected = start.clone();
  double worst_ratio = 0;
  for (int64_t step = 0; step < 300; ++step) {
    at::Tensor gradient = (at::randn({size}) * (1 + step % 7)).to(at::kBFloat16);
    Message push = message(MessageType::kPush);
    push.step = step;
    push.lr = 0.1;
    push.payload = gradient;
    link.send(push);
    Message reply = link.receive(30);
    ASSERT_EQ(reply.type, MessageType::kParams);
    ASSERT_EQ(reply.payload.scalar_type(), at::kBFloat16);
    at::Tensor before = expected.clone();
    expected.sub_(gradient.to(at::kFloat) * 0.1);
    held.add_(reply.payload);
    double change = (expected - before).abs().max().item<double>();
    worst_ratio = std::max(worst_ratio, (held - expected).abs().max().item<double>() / change);
  }
  // bfloat16 keeps 8 significant bits: a rounding is at most 2^-9 of what
  // is rounded; the change plus the carried residual stays below 2x it.
  EXPECT_LT(worst_ratio, std::ldexp(1.0, -8));
  // Rounding the parameters themselves would be off by up to 2^-9 of them.
  EXPECT_LT((held - expected).abs().max().item<double>(), expected.abs().max().item<double>() * std::ldexp(1.0, -12));

  Message snapshot = message(MessageType::kSnapshot);
  link.send(snapshot);
  Message state = link.receive(30);
  ASSERT_EQ(state.type, MessageType::kState);
  EXPECT_TRUE(at::allclose(state.payload, expected, 1e-5, 1e-5));
  link.send(message(MessageType::kDone));
  server.join();
}

}  // namespace
}  // namespace colo::dist
