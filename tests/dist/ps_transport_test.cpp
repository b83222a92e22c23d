#include "colo/dist/ps_transport.h"

#include <netdb.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <zmq.hpp>

#include "colo/core/stopwatch.h"
#include "colo/dist/int8_codec.h"

namespace colo::dist {
namespace {

std::optional<Envelope> receive_within(ServerSocket& server, double seconds, at::Tensor* into = nullptr) {
  Stopwatch clock;
  while (clock.elapsed_s() < seconds) {
    if (auto envelope = server.receive(0.2, into)) return envelope;
  }
  return std::nullopt;
}

TEST(PsTransport, MessagesAndPayloadsArriveWhole) {
  ServerSocket server("127.0.0.1", "server 0");
  ServerLink link(server.address(), 3, "server 0");
  Message hello;
  hello.type = MessageType::kPush;
  hello.worker = 3;
  hello.step = 41;
  hello.count = 7;
  hello.lr = 0.125;
  hello.blob = std::string("host\0name", 9);
  hello.payload = at::arange(100000, at::kFloat);
  link.send(hello);

  auto got = receive_within(server, 10);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->worker, 3);  // from the link's identity
  EXPECT_EQ(got->message.type, MessageType::kPush);
  EXPECT_EQ(got->message.step, 41);
  EXPECT_EQ(got->message.count, 7);
  EXPECT_EQ(got->message.lr, 0.125);
  EXPECT_EQ(got->message.blob, hello.blob);
  ASSERT_TRUE(got->message.payload.defined());
  EXPECT_TRUE(got->message.payload.equal(hello.payload));

  Message reply;
  reply.type = MessageType::kParams;
  reply.hold_s = 1.5;
  reply.payload = at::full({5000}, 2.5f);
  server.send(3, reply);
  at::Tensor into = at::zeros({5000}, at::kFloat);
  Message back = link.receive(10, &into);
  EXPECT_EQ(back.type, MessageType::kParams);
  EXPECT_EQ(back.hold_s, 1.5);
  EXPECT_EQ(back.payload.data_ptr(), into.data_ptr());  // received in place
  EXPECT_TRUE(into.equal(reply.payload));
}

TEST(PsTransport, BFloat16PayloadsArriveAsBFloat16InPlaceOnlyIntoABFloat16Buffer) {
  ServerSocket server("127.0.0.1", "server 0");
  ServerLink link(server.address(), 1, "server 0");
  Message push;
  push.type = MessageType::kPush;
  push.payload = at::linspace(-3, 3, 3000).to(at::kBFloat16);
  link.send(push);
  at::Tensor into = at::zeros({3000}, at::kBFloat16);
  auto got = receive_within(server, 10, &into);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->message.payload.data_ptr(), into.data_ptr());
  EXPECT_TRUE(into.equal(push.payload));

  link.send(push);
  at::Tensor floats = at::zeros({3000}, at::kFloat);
  got = receive_within(server, 10, &floats);
  ASSERT_TRUE(got);
  EXPECT_NE(got->message.payload.data_ptr(), floats.data_ptr());  // not the float32 buffer
  EXPECT_EQ(got->message.payload.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(got->message.payload.equal(push.payload));
  EXPECT_TRUE(floats.eq(0).all().item<bool>());
}

TEST(PsTransport, PackedInt8PayloadsArriveAsBytesInPlaceIntoAByteBuffer) {
  ServerSocket server("127.0.0.1", "server 0");
  ServerLink link(server.address(), 1, "server 0");
  Message push;
  push.type = MessageType::kPush;
  push.payload = pack_int8(at::linspace(-3, 3, 3000));
  link.send(push);
  at::Tensor into = at::zeros({push.payload.numel()}, at::kByte);
  auto got = receive_within(server, 10, &into);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->message.payload.data_ptr(), into.data_ptr());
  EXPECT_TRUE(into.equal(push.payload));
  EXPECT_TRUE(unpack_int8(into, 3000, at::kCPU).equal(unpack_int8(push.payload, 3000, at::kCPU)));
}

// What a server gets from a peer that speaks the framing wrongly: one
// line naming the worker, not a payload read as the wrong type.
TEST(PsTransport, AFrameOfAnUnknownElementTypeOrTheWrongSizeIsRefusedNamingTheWorker) {
  struct RawHeader {
    uint32_t magic = 0x636f6c6f, type = 3;
    int32_t worker = 2, element = 0;
    int64_t step = 0, count = 0;
    double lr = 0, hold_s = 0;
    int64_t elements = 0;
  };
  auto refusal = [](int32_t element, int64_t elements, size_t payload_bytes) {
    ServerSocket server("127.0.0.1", "server 0");
    zmq::context_t context(1);
    zmq::socket_t dealer(context, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::routing_id, "worker-2");
    dealer.set(zmq::sockopt::linger, 0);
    dealer.connect(server.address());
    RawHeader header;
    header.element = element;
    header.elements = elements;
    std::string payload(payload_bytes, '\0');
    dealer.send(zmq::buffer(&header, sizeof(header)), zmq::send_flags::sndmore);
    dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
    dealer.send(zmq::buffer(payload), zmq::send_flags::none);
    try {
      receive_within(server, 10);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal(7, 4, 16), "malformed message from worker 2");    // no such element type
  EXPECT_EQ(refusal(1, 4, 16), "malformed message from worker 2");    // 4 bfloat16 are 8 bytes
  EXPECT_EQ(refusal(0, -1, 0), "malformed message from worker 2");    // a negative count
  EXPECT_EQ(refusal(1, 4, 8), "accepted");                            // well formed
  EXPECT_EQ(refusal(2, 12, 8), "malformed message from worker 2");    // 12 packed bytes are 12 bytes
  EXPECT_EQ(refusal(2, 12, 12), "accepted");
}

TEST(PsTransport, MessageWithoutPayloadHasNone) {
  ServerSocket server("127.0.0.1", "server 0");
  ServerLink link(server.address(), 0, "server 0");
  Message done;
  done.type = MessageType::kDone;
  link.send(done);
  auto got = receive_within(server, 10);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->message.type, MessageType::kDone);
  EXPECT_FALSE(got->message.payload.defined());
}

TEST(PsTransport, ServerCountsAClosedWorkerConnection) {
  ServerSocket server("127.0.0.1", "server 0");
  auto link = std::make_unique<ServerLink>(server.address(), 1, "server 0");
  Message hello;
  hello.type = MessageType::kHello;
  link->send(hello);
  ASSERT_TRUE(receive_within(server, 10));
  EXPECT_EQ(server.disconnections(), 0);
  link.reset();
  Stopwatch clock;
  while (server.disconnections() == 0 && clock.elapsed_s() < 10) server.receive(0.2);
  EXPECT_EQ(server.disconnections(), 1);
}

TEST(PsTransport, ServerNamesTheWorkerWhoseConnectionClosed) {
  ServerSocket server("127.0.0.1", "server 0");
  ServerLink first(server.address(), 0, "server 0");
  auto second = std::make_unique<ServerLink>(server.address(), 2, "server 0");
  Message hello;
  hello.type = MessageType::kHello;
  first.send(hello);
  second->send(hello);
  ASSERT_TRUE(receive_within(server, 10));
  ASSERT_TRUE(receive_within(server, 10));
  second.reset();
  Stopwatch clock;
  while (server.disconnections() == 0 && clock.elapsed_s() < 10) server.receive(0.2);
  EXPECT_EQ(server.closed_workers(), std::vector<int>{2});
}

// Several hosts: a server offers its host's name, which ZeroMQ cannot bind.
TEST(PsTransport, AServerGivenAHostNameListensOnEveryInterfaceAndOffersTheName) {
  std::string host = this_host_name();
  addrinfo* found = nullptr;
  if (host.empty() || ::getaddrinfo(host.c_str(), nullptr, nullptr, &found) != 0) {
    GTEST_SKIP() << "this host's name \"" << host << "\" does not resolve";
  }
  ::freeaddrinfo(found);
  ServerSocket server(host, "server 0");
  std::string address = server.address();
  ASSERT_EQ(address.rfind("tcp://" + host + ":", 0), 0u) << address;
  std::string port = address.substr(address.rfind(':'));
  // Reached through the name, and through loopback: every interface listens.
  for (const std::string& at : {address, "tcp://127.0.0.1" + port}) {
    ServerLink link(at, 1, "server 0");
    Message done;
    done.type = MessageType::kDone;
    link.send(done);
    auto got = receive_within(server, 10);
    ASSERT_TRUE(got) << at;
    EXPECT_EQ(got->message.type, MessageType::kDone);
  }
}

TEST(PsTransport, WorkerWaitingOnAServerThatClosesFailsAtOnceNamingIt) {
  auto server = std::make_unique<ServerSocket>("127.0.0.1", "server 2");
  ServerLink link(server->address(), 0, "server 2");
  Message hello;
  hello.type = MessageType::kHello;
  link.send(hello);
  ASSERT_TRUE(receive_within(*server, 10));
  server.reset();
  Stopwatch clock;
  try {
    link.receive(60);
    FAIL() << "receive returned from a closed server";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("server 2 closed the connection"), std::string::npos) << e.what();
  }
  EXPECT_LT(clock.elapsed_s(), 10);  // not the 60 s timeout
}

TEST(PsTransport, SilentServerTimesOutNamingIt) {
  ServerSocket server("127.0.0.1", "server 1");
  ServerLink link(server.address(), 0, "server 1");
  try {
    link.receive(0.3);
    FAIL() << "receive returned without a message";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("server 1 sent nothing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace colo::dist
