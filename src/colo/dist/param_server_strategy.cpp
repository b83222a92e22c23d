#include "colo/dist/param_server_strategy.h"

#include <ATen/ATen.h>

#include "colo/core/stopwatch.h"
#include "colo/dist/param_server.h"

namespace colo::dist {

ParamServerStrategy::ParamServerStrategy(FlatModel& model, const FlatOptimizer& optimizer,
                                         Rendezvous& rendezvous, const ClusterSpec& spec, int worker)
    : model_(model), mode_(spec.param_server.mode), worker_(worker), timeout_s_(spec.timeout_s) {
  bool cuda = model_.values().is_cuda();
  auto host = at::TensorOptions().dtype(at::kFloat).pinned_memory(cuda);
  host_values_ = at::empty({model_.size()}, host);
  host_gradients_ = at::empty({model_.size()}, host);
  auto state = optimizer.state();
  for (int64_t s = 0; s < spec.servers; ++s) {
    ranges_.push_back(shard_range(model_.size(), spec.servers, s));
    std::string name = "server " + std::to_string(s);
    servers_.push_back(connect_to(rendezvous.get(server_address_key(s)), timeout_s_, name));
    Message hello;
    hello.type = MessageType::kHello;
    hello.worker = worker_;
    servers_.back().send(hello);
    if (worker_ != 0) continue;
    auto [begin, end] = ranges_.back();
    std::vector<at::Tensor> parts{model_.values().narrow(0, begin, end - begin)};
    for (size_t m = 0; m + 1 < state.size(); ++m) parts.push_back(state[m].narrow(0, begin, end - begin));
    Message init;
    init.type = MessageType::kInit;
    init.worker = worker_;
    init.step = state.back().item<int64_t>();
    init.payload = at::cat(parts).to(at::kCPU).contiguous();
    servers_.back().send(init);
  }
  pull();
}

// No kDone here: a worker that fails mid-run must look to the servers like
// one that went away (they then fail the run), not like one that finished.
ParamServerStrategy::~ParamServerStrategy() = default;

void ParamServerStrategy::begin_step() { model_.zero_grad(); }

double ParamServerStrategy::pull() {
  double held = 0;
  for (size_t s = 0; s < servers_.size(); ++s) {
    auto [begin, end] = ranges_[s];
    at::Tensor slot = host_values_.narrow(0, begin, end - begin);
    Message reply = servers_[s].receive(3 * timeout_s_, &slot);
    if (reply.type != MessageType::kParams || reply.payload.numel() != end - begin) {
      throw std::runtime_error("unexpected reply from " + servers_[s].peer());
    }
    held = std::max(held, reply.hold_s);
  }
  model_.values().copy_(host_values_, /*non_blocking=*/false);
  return held;
}

ExchangeCost ParamServerStrategy::finish_step(int64_t step, double lr) {
  Stopwatch clock;
  host_gradients_.copy_(model_.gradients());
  ExchangeCost cost;
  for (size_t s = 0; s < servers_.size(); ++s) {
    auto [begin, end] = ranges_[s];
    Message push;
    push.type = MessageType::kPush;
    push.worker = worker_;
    push.step = step;
    push.lr = lr;
    push.payload = host_gradients_.narrow(0, begin, end - begin);
    servers_[s].send(push);
    cost.bytes_sent += (end - begin) * 4;
  }
  cost.waiting_s = pull();
  cost.communication_s = std::max(0.0, clock.elapsed_s() - cost.waiting_s);
  return cost;
}

void ParamServerStrategy::finish() {
  if (finished_) return;
  finished_ = true;
  for (auto& server : servers_) {
    Message done;
    done.type = MessageType::kDone;
    done.worker = worker_;
    server.send(done);
  }
}

void release_servers(Rendezvous& rendezvous, const ClusterSpec& spec, int worker) {
  for (int64_t s = 0; s < spec.servers; ++s) {
    std::string name = "server " + std::to_string(s);
    Connection server = connect_to(rendezvous.get(server_address_key(s)), spec.timeout_s, name);
    Message done;
    done.type = MessageType::kDone;
    done.worker = worker;
    server.send(done);
  }
}

}  // namespace colo::dist
