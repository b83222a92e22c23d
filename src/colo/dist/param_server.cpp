#include "colo/dist/param_server.h"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include <ATen/ATen.h>

#include "colo/core/stopwatch.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/van.h"

namespace colo::dist {
namespace {

// A reply not sent yet: to `connection`, held since `since`.
struct HeldReply {
  size_t connection;
  double since;
  int64_t clock;  // ssp: the step the worker wants to start
};

class Server {
 public:
  Server(const ClusterSpec& spec, Rendezvous& rendezvous, int64_t index)
      : spec_(spec), index_(index), listener_(rendezvous.local_host()),
        clock_(static_cast<size_t>(spec.workers), 0) {
    rendezvous.set(server_address_key(index), listener_.address());
  }

  ServerReport serve() {
    while (done_ < spec_.workers) {
      std::vector<int> fds{listener_.fd()};
      for (const auto& c : connections_) fds.push_back(c.fd());
      int ready = wait_readable(fds, initialized_ ? spec_.timeout_s : -1);
      if (ready < 0) {
        check_stalled();
        continue;
      }
      if (ready == 0) {
        connections_.push_back(listener_.accept(spec_.timeout_s, "a worker"));
        worker_of_.push_back(-1);
        finished_.push_back(false);
        continue;
      }
      handle(static_cast<size_t>(ready - 1));
    }
    return report_;
  }

 private:
  void handle(size_t c) {
    Message message;
    try {
      message = connections_[c].receive(spec_.timeout_s, scratch_.defined() ? &scratch_ : nullptr);
    } catch (const std::exception& e) {
      if (finished_[c]) {  // closed after its kDone: fine
        connections_[c] = Connection();
        return;
      }
      throw std::runtime_error("server " + std::to_string(index_) + ": worker " +
                               std::to_string(worker_of_[c]) + " went away before it was done: " + e.what());
    }
    switch (message.type) {
      case MessageType::kHello:
        if (message.worker < 0 || message.worker >= spec_.workers) {
          throw std::runtime_error("server " + std::to_string(index_) + ": hello from unknown worker " +
                                   std::to_string(message.worker));
        }
        worker_of_[c] = message.worker;
        connections_[c].set_peer("worker " + std::to_string(message.worker));
        if (initialized_) {
          reply(c, 0);
        } else {
          waiting_for_init_.push_back(c);
        }
        break;
      case MessageType::kInit:
        initialise(message);
        for (size_t waiting : waiting_for_init_) reply(waiting, 0);
        waiting_for_init_.clear();
        break;
      case MessageType::kPush:
        push(c, message);
        break;
      case MessageType::kDone:
        finished_[c] = true;
        ++done_;
        release_ssp();  // a finished worker no longer holds anyone back
        if (spec_.param_server.mode == "sync") complete_sync_round();
        break;
      default:
        throw std::runtime_error("server " + std::to_string(index_) + ": unexpected message type " +
                                 std::to_string(static_cast<int>(message.type)));
    }
  }

  void initialise(const Message& message) {
    // The payload carries the workers' optimiser state; the server's own
    // optimiser (momentum compensation) may keep fewer buffers.
    int moments = FlatOptimizer::moment_buffers(spec_.train.optimizer);
    int64_t total = message.payload.numel();
    if (total % (1 + moments) != 0) {
      throw std::runtime_error("server " + std::to_string(index_) + ": initial state of " +
                               std::to_string(total) + " floats does not split into " +
                               std::to_string(1 + moments) + " buffers");
    }
    int64_t size = total / (1 + moments);
    values_ = message.payload.narrow(0, 0, size).clone();
    gradients_ = at::zeros({size}, at::kFloat);
    sum_ = at::zeros({size}, at::kFloat);
    scratch_ = at::empty({size}, at::kFloat);
    optimizer_ = std::make_unique<FlatOptimizer>(
        values_, gradients_, server_optimizer(spec_.train.optimizer, spec_.param_server, spec_.workers));
    auto state = optimizer_->state();
    int kept = std::min(moments, static_cast<int>(state.size()) - 1);
    for (int m = 0; m < kept; ++m) state[m].copy_(message.payload.narrow(0, (1 + m) * size, size));
    state.back().fill_(message.step);
    initialized_ = true;
  }

  void push(size_t c, const Message& message) {
    if (!initialized_) throw std::runtime_error("server " + std::to_string(index_) + ": push before init");
    if (message.payload.numel() != values_.numel()) {
      throw std::runtime_error("server " + std::to_string(index_) + ": push of " +
                               std::to_string(message.payload.numel()) + " floats, expected " +
                               std::to_string(values_.numel()));
    }
    ++report_.pushes;
    const std::string& mode = spec_.param_server.mode;
    if (mode == "sync") {
      sum_.add_(message.payload);
      held_.push_back(HeldReply{c, clock_now(), message.step + 1});
      last_lr_ = message.lr;
      complete_sync_round();
      return;
    }
    gradients_.copy_(message.payload);
    optimizer_->step(message.lr);
    ++report_.updates;
    if (mode == "async") {
      reply(c, 0);
      return;
    }
    clock_[static_cast<size_t>(worker_of_[c])] = message.step + 1;
    held_.push_back(HeldReply{c, clock_now(), message.step + 1});
    release_ssp();
  }

  // Sync: once every worker still running has pushed this round, one
  // averaged update and every held worker is answered.
  void complete_sync_round() {
    int64_t running = spec_.workers - done_;
    if (held_.empty() || static_cast<int64_t>(held_.size()) < running) return;
    gradients_.copy_(sum_).div_(static_cast<double>(held_.size()));
    optimizer_->step(last_lr_);
    ++report_.updates;
    sum_.zero_();
    for (const auto& h : held_) reply(h.connection, clock_now() - h.since);
    held_.clear();
  }

  // SSP: answers every held worker that is at most `staleness` steps ahead
  // of the slowest unfinished worker.
  void release_ssp() {
    if (spec_.param_server.mode != "ssp") return;
    int64_t slowest = INT64_MAX;
    for (size_t c = 0; c < connections_.size(); ++c) {
      if (worker_of_[c] >= 0 && !finished_[c]) slowest = std::min(slowest, clock_[static_cast<size_t>(worker_of_[c])]);
    }
    // Workers that never connected are at clock 0.
    int64_t connected = std::count_if(worker_of_.begin(), worker_of_.end(), [](int w) { return w >= 0; });
    if (connected < spec_.workers) slowest = std::min<int64_t>(slowest, 0);
    std::vector<HeldReply> still;
    for (const auto& h : held_) {
      if (slowest == INT64_MAX || h.clock - slowest <= spec_.param_server.staleness) {
        reply(h.connection, clock_now() - h.since);
      } else {
        still.push_back(h);
      }
    }
    held_ = std::move(still);
  }

  void check_stalled() {
    if (held_.empty()) return;
    std::string missing;
    for (size_t c = 0; c < connections_.size(); ++c) {
      bool held = std::any_of(held_.begin(), held_.end(), [&](const HeldReply& h) { return h.connection == c; });
      if (!held && !finished_[c]) {
        missing += ' ';  // appended, not " " + ...: GCC 12 misreads that as an overflowing copy
        missing += std::to_string(worker_of_[c]);
      }
    }
    throw std::runtime_error("server " + std::to_string(index_) + ": workers" + missing +
                             " sent nothing for " + std::to_string(spec_.timeout_s) +
                             " s while others waited on them");
  }

  void reply(size_t c, double hold_s) {
    report_.held_s += hold_s;
    Message message;
    message.type = MessageType::kParams;
    message.hold_s = hold_s;
    message.payload = values_;
    connections_[c].send(message);
  }

  double clock_now() const { return uptime_.elapsed_s(); }

  const ClusterSpec& spec_;
  int64_t index_;
  Listener listener_;
  Stopwatch uptime_;
  std::vector<Connection> connections_;
  std::vector<int> worker_of_;
  std::vector<bool> finished_;
  std::vector<size_t> waiting_for_init_;
  std::vector<HeldReply> held_;
  std::vector<int64_t> clock_;
  bool initialized_ = false;
  int64_t done_ = 0;
  double last_lr_ = 0;
  at::Tensor values_, gradients_, sum_, scratch_;
  std::unique_ptr<FlatOptimizer> optimizer_;
  ServerReport report_;
};

}  // namespace

std::string server_address_key(int64_t index) { return "ps/server/" + std::to_string(index); }

ServerReport run_param_server(const ClusterSpec& spec, Rendezvous& rendezvous, int64_t index) {
  Server server(spec, rendezvous, index);
  return server.serve();
}

}  // namespace colo::dist
