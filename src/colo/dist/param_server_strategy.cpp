#include "colo/dist/param_server_strategy.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include <ATen/ATen.h>

#include "colo/core/stopwatch.h"
#include "colo/dist/int8_codec.h"
#include "colo/dist/param_server.h"
#include "colo/gpu/shared_device_memory.h"

namespace colo::dist {
namespace {

// A worker waits this many timeout_s for a server's answer: a synchronous
// round answers only once the slowest worker has pushed, and that one may
// be evaluating or checkpointing meanwhile. The servers fail the run for a
// worker silent longer than timeout_s themselves.
constexpr double kServerAnswerTimeouts = 3;

}  // namespace

ParamServerStrategy::ParamServerStrategy(FlatModel& model, const FlatOptimizer& optimizer,
                                         Rendezvous& rendezvous, const ClusterSpec& spec, int worker)
    : model_(model), rendezvous_(rendezvous), spec_(spec),
      moments_(FlatOptimizer::moment_buffers(spec.train.optimizer)), mode_(spec.param_server.mode),
      worker_(worker), timeout_s_(spec.timeout_s), compressed_(spec.param_server.compression == "bf16"),
      int8_(spec.param_server.compression == "int8"), overlap_(spec.param_server.overlap) {
  bool cuda = model_.values().is_cuda();
  auto host = at::TensorOptions().dtype(compressed_ ? at::kBFloat16 : at::kFloat).pinned_memory(cuda);
  if (int8_) {
    residual_ = at::zeros_like(model_.gradients());
  } else {
    host_values_ = at::empty({model_.size()}, host);
    host_gradients_ = at::empty({model_.size()}, host);
  }
  auto state = optimizer.state();
  for (int64_t s = 0; s < spec.servers; ++s) {
    servers_.push_back(connect(s));
    if (worker_ != 0) continue;
    ServerEnd& server = servers_.back();
    std::vector<at::Tensor> parts{model_.values().narrow(0, server.begin, server.end - server.begin)};
    for (size_t m = 0; m + 1 < state.size(); ++m) {
      parts.push_back(state[m].narrow(0, server.begin, server.end - server.begin));
    }
    Message init;
    init.type = MessageType::kInit;
    init.worker = worker_;
    init.step = state.back().item<int64_t>();
    init.payload = at::cat(parts).to(at::kCPU).contiguous();
    server.link.send(init);
  }
  if (worker_ == 0) rendezvous_.set(servers_started_key(), "1");
  pull();
}

ParamServerStrategy::ServerEnd ParamServerStrategy::connect(int64_t s) {
  auto [begin, end] = shard_range(model_.size(), spec_.servers, s);
  std::string address = rendezvous_.get(server_address_key(s));
  ServerEnd server{address, ServerLink(address, worker_, "server " + std::to_string(s)), begin, end, {}, {}, {}, {}};
  bool cuda = model_.values().is_cuda();
  Message hello;
  hello.type = MessageType::kHello;
  hello.worker = worker_;
  hello.count = end - begin;
  hello.blob = this_host_name() + (cuda ? "\ncuda" : "\ncpu");
  server.link.send(hello);
  Message welcome = server.link.receive(kServerAnswerTimeouts * timeout_s_);
  if (welcome.type != MessageType::kWelcome) throw std::runtime_error("unexpected answer from " + server.link.peer());
  if (!welcome.blob.empty()) {
    size_t half = welcome.blob.size() / 2;
    try {
      server.inbox = gpu::map_shared_device_buffer(welcome.blob.substr(0, half), end - begin, model_.values().device());
      server.outbox = gpu::map_shared_device_buffer(welcome.blob.substr(half), end - begin, model_.values().device());
    } catch (const std::exception& e) {
      throw std::runtime_error("worker " + std::to_string(worker_) + " cannot map the device memory of " +
                               server.link.peer() + " (" + e.what() +
                               "); set param_server.transport = \"zmq\" to send through host memory");
    }
  } else if (int8_) {
    auto bytes = at::TensorOptions().dtype(at::kByte).pinned_memory(cuda);
    server.packed_out = at::empty({int8_packed_bytes(end - begin)}, bytes);
    server.packed_in = at::empty({int8_packed_bytes(end - begin)}, bytes);
  }
  return server;
}

void ParamServerStrategy::rejoin(size_t s, const ServerClosed& lost) {
  const double wait_s = spec_.param_server.rejoin_s;
  if (wait_s <= 0) throw lost;
  const std::string old = servers_[s].address;
  const std::string peer = servers_[s].link.peer();
  std::fprintf(stderr, "worker %d: %s; waiting up to %.0f s for it to be restarted\n", worker_, lost.what(), wait_s);
  Stopwatch waiting;
  while (rendezvous_.get(server_address_key(static_cast<int64_t>(s))) == old) {
    if (waiting.elapsed_s() > wait_s) {
      char within[32];
      std::snprintf(within, sizeof(within), "%g", wait_s);
      throw ServerClosed(std::string(lost.what()) + " and was not back within " + within + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  servers_[s] = connect(static_cast<int64_t>(s));
  std::fprintf(stderr, "worker %d: %s is back at %s after %.1f s\n", worker_, peer.c_str(),
               servers_[s].address.c_str(), waiting.elapsed_s());
}

// No kDone here: a worker that fails mid-run must look to the servers like
// one that went away (they then fail the run), not like one that finished.
ParamServerStrategy::~ParamServerStrategy() = default;

void ParamServerStrategy::begin_step() { model_.zero_grad(); }

double ParamServerStrategy::pull() {
  double held = 0;
  for (size_t s = 0; s < servers_.size(); ++s) held = std::max(held, pull_from(s));
  return held;
}

double ParamServerStrategy::pull_from(size_t s) {
  ServerEnd& server = servers_[s];
  at::Tensor slot = int8_ ? server.packed_in : host_values_.narrow(0, server.begin, server.end - server.begin);
  Message reply;
  Stopwatch receiving;
  try {
    reply = server.link.receive(kServerAnswerTimeouts * timeout_s_, &slot);
  } catch (const ServerClosed& lost) {
    rejoin(s, lost);
    return pull_from(s);  // the restarted server's answer to the hello
  }
  phases_s_["receive_s"] += receiving.elapsed_s();
  Stopwatch applying;
  bool shared = server.outbox.defined();
  const int64_t count = server.end - server.begin;
  const bool packed = reply.payload.defined() && reply.payload.scalar_type() == at::kByte;
  if (reply.type != MessageType::kParams ||
      (!shared && reply.payload.numel() != (packed ? int8_packed_bytes(count) : count))) {
    throw std::runtime_error("unexpected reply from " + server.link.peer());
  }
  at::Tensor range = model_.values().narrow(0, server.begin, count);
  if (shared) {
    range.copy_(server.outbox);
  } else if (packed) {
    range.add_(unpack_int8(reply.payload, count, range.device()));  // what the parameters lack, as 8-bit codes
  } else if (reply.payload.scalar_type() == at::kBFloat16) {
    range.add_(reply.payload.to(range.device()));  // a compressed reply: what the parameters lack; waits (slot is reused)
  } else {
    range.copy_(reply.payload);  // waits: the payload may be the reused slot
  }
  phases_s_["apply_s"] += applying.elapsed_s();
  return reply.hold_s;
}

ExchangeCost ParamServerStrategy::finish_step(int64_t step, double lr) {
  Stopwatch clock;
  ExchangeCost cost;
  phases_s_ = {{"receive_s", 0.0}, {"apply_s", 0.0}, {"to_host_s", 0.0}, {"send_s", 0.0}};
  // Overlap: the reply to the last push, which arrived while this step computed.
  if (awaiting_reply_) cost.waiting_s = take_outstanding_reply();
  Stopwatch to_host;
  bool any_host = false;
  for (auto& server : servers_) {
    at::Tensor range = model_.gradients().narrow(0, server.begin, server.end - server.begin);
    if (server.inbox.defined()) {
      server.inbox.copy_(range);
    } else {
      any_host = true;
    }
  }
  if (any_host && int8_) {
    // Packed on the device, each server's range on its own: a quarter of the bytes cross to the host.
    for (auto& server : servers_) {
      if (server.inbox.defined()) continue;
      at::Tensor missed = residual_.narrow(0, server.begin, server.end - server.begin);
      server.packed_out.copy_(pack_int8(model_.gradients().narrow(0, server.begin, server.end - server.begin), &missed));
    }
  } else if (any_host) {
    // Converted on the device: half the bytes cross to the host.
    host_gradients_.copy_(compressed_ ? model_.gradients().to(at::kBFloat16) : model_.gradients());
  }
  // The servers read the inboxes as soon as the pushes arrive.
  gpu::finish_writes_for_other_processes(model_.values().device());
  phases_s_["to_host_s"] += to_host.elapsed_s();
  Stopwatch sending;
  for (auto& server : servers_) {
    Message push;
    push.type = MessageType::kPush;
    push.worker = worker_;
    push.step = step;
    push.lr = lr;
    if (!server.inbox.defined()) {
      push.payload = int8_ ? server.packed_out : host_gradients_.narrow(0, server.begin, server.end - server.begin);
    }
    cost.bytes_sent += server.inbox.defined() ? (server.end - server.begin) * 4
                                              : push.payload.numel() * push.payload.element_size();
    try {
      server.link.send(push);
    } catch (const ServerClosed&) {
      // Lost with the server; the pull below rejoins it or fails.
    }
  }
  phases_s_["send_s"] += sending.elapsed_s();
  if (overlap_) {
    awaiting_reply_ = true;
  } else {
    cost.waiting_s += pull();
  }
  cost.communication_s = std::max(0.0, clock.elapsed_s() - cost.waiting_s);
  cost.phases_s = phases_s_;
  return cost;
}

double ParamServerStrategy::take_outstanding_reply() {
  awaiting_reply_ = false;
  return pull();
}

std::vector<at::Tensor> ParamServerStrategy::run_state() {
  if (awaiting_reply_) take_outstanding_reply();
  const int64_t size = model_.size();
  std::vector<at::Tensor> run;
  for (int m = 0; m <= moments_; ++m) run.push_back(at::empty({size}, at::kFloat));
  at::Tensor step = at::zeros({1}, at::kLong);
  for (size_t s = 0; s < servers_.size(); ++s) {
    Message ask;
    ask.type = MessageType::kSnapshot;
    ask.worker = worker_;
    Message state;
    try {
      servers_[s].link.send(ask);
      state = servers_[s].link.receive(kServerAnswerTimeouts * timeout_s_);
    } catch (const ServerClosed& lost) {
      rejoin(s, lost);
      pull_from(s);
      servers_[s].link.send(ask);
      state = servers_[s].link.receive(kServerAnswerTimeouts * timeout_s_);
    }
    ServerEnd& server = servers_[s];
    const int64_t range = server.end - server.begin;
    if (state.type != MessageType::kState || state.payload.numel() != range * (1 + moments_)) {
      throw std::runtime_error("unexpected answer to a snapshot from " + server.link.peer());
    }
    for (int m = 0; m <= moments_; ++m) {
      run[static_cast<size_t>(m)].narrow(0, server.begin, range).copy_(state.payload.narrow(0, m * range, range));
    }
    step.fill_(state.step);  // every server has applied the same pushes once no worker exchanges
  }
  run.push_back(step);
  return run;
}

void ParamServerStrategy::finish() {
  if (finished_) return;
  finished_ = true;
  if (awaiting_reply_) take_outstanding_reply();
  if (spec_.param_server.rejoin_s > 0) rendezvous_.set(worker_done_key(worker_), "1");
  for (size_t s = 0; s < servers_.size(); ++s) {
    Message done;
    done.type = MessageType::kDone;
    done.worker = worker_;
    try {
      bool rejoining = spec_.param_server.rejoin_s > 0;
      if (rejoining && servers_[s].link.closed()) throw ServerClosed(servers_[s].link.peer() + " closed the connection");
      servers_[s].link.send(done);
    } catch (const ServerClosed& lost) {
      rejoin(s, lost);
      servers_[s].link.send(done);
    }
  }
}

void release_servers(Rendezvous& rendezvous, const ClusterSpec& spec, int worker) {
  if (spec.param_server.rejoin_s > 0) rendezvous.set(worker_done_key(worker), "1");
  for (int64_t s = 0; s < spec.servers; ++s) {
    ServerLink server(rendezvous.get(server_address_key(s)), worker, "server " + std::to_string(s));
    Message done;
    done.type = MessageType::kDone;
    done.worker = worker;
    server.send(done);
  }
}

}  // namespace colo::dist
