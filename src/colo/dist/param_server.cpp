#include "colo/dist/param_server.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/core/stopwatch.h"
#include "colo/dist/flat_model.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/int8_codec.h"
#include "colo/dist/ps_transport.h"
#include "colo/dist/run_checkpoint.h"
#include "colo/gpu/shared_device_memory.h"

namespace colo::dist {
namespace {

// A reply not sent yet: to `worker`, held since `since`.
struct HeldReply {
  int worker;
  double since;
  int64_t clock;  // ssp: the step the worker wants to start
};

// A worker's gradient inbox and parameter outbox in the server's device
// memory, which the worker maps (same host, CUDA).
struct SharedBoxes {
  gpu::SharedDeviceBuffer inbox;
  gpu::SharedDeviceBuffer outbox;
  SharedBoxes(int64_t size, c10::Device device) : inbox(size, device), outbox(size, device) {}
};

// How long a closed worker connection may wait for its kDone before the
// server calls the worker gone (the message and the close travel apart).
constexpr double kDoneGraceS = 2.0;

class Server {
 public:
  Server(const ClusterSpec& spec, Rendezvous& rendezvous, int64_t index, c10::Device device)
      : spec_(spec), rendezvous_(rendezvous), index_(index), device_(device),
        name_("server " + std::to_string(index)), socket_(rendezvous.local_host(), name_),
        workers_(static_cast<size_t>(spec.workers)) {
    restarted_ = rendezvous.has(server_address_key(index));
    if (restarted_) {
      if (rendezvous.has(servers_started_key())) restore_from_checkpoint();
      count_workers_done();
    }
    rendezvous.set(server_address_key(index), socket_.address());
    std::fprintf(stderr, "%s: serving at %s\n", name_.c_str(), socket_.address().c_str());
  }

  ServerReport serve() {
    Stopwatch silence;
    while (done_ < spec_.workers) {
      auto envelope = socket_.receive(1.0, scratch_.defined() ? &scratch_ : nullptr);
      check_disconnections();
      if (!envelope) {
        if (initialized_ && silence.elapsed_s() > spec_.timeout_s) check_stalled();
        // A worker may have finished while this server was down.
        if (restarted_) count_workers_done();
        continue;
      }
      silence.restart();
      handle(envelope->worker, envelope->message);
    }
    return report_;
  }

 private:
  struct WorkerState {
    bool hello = false;
    bool done = false;
    int64_t clock = 0;                     // ssp: the step it wants to start
    int64_t pulled_update = 0;             // updates applied when it was last answered
    // ... when it was answered the time before: with overlap, the parameters
    // its next gradient is computed on (it takes a reply a step late).
    int64_t pulled_before = 0;
    bool answered = false;                 // since its hello
    std::unique_ptr<SharedBoxes> shared;   // null: payloads through the transport
    // Through the transport with compression: the parameters the worker
    // holds, as the replies so far built them (undefined before the first).
    at::Tensor holds;
    at::Tensor reply_host;  // the pinned buffer its compressed replies go out from
  };

  void handle(int worker, const Message& message) {
    if (worker < 0 || worker >= spec_.workers) {
      throw std::runtime_error(name_ + ": message from unknown worker " + std::to_string(worker));
    }
    WorkerState& state = workers_[static_cast<size_t>(worker)];
    switch (message.type) {
      case MessageType::kHello:
        welcome(worker, message);
        if (initialized_) {
          reply({worker}, 0);
        } else {
          waiting_for_init_.push_back(worker);
        }
        break;
      case MessageType::kInit:
        initialise(message);
        reply(waiting_for_init_, 0);
        waiting_for_init_.clear();
        break;
      case MessageType::kPush:
        push(worker, message);
        break;
      case MessageType::kSnapshot:
        send_state(worker);
        break;
      case MessageType::kDone:
        state.done = true;
        ++done_;
        release_ssp();  // a finished worker no longer holds anyone back
        if (spec_.param_server.mode == "sync") complete_sync_round();
        break;
      default:
        throw std::runtime_error(name_ + ": unexpected message type " +
                                 std::to_string(static_cast<int>(message.type)) + " from worker " +
                                 std::to_string(worker));
    }
  }

  // Answers a hello with the shared buffers the worker is to use: where it
  // runs on this host with a CUDA device and this server holds its range on
  // a GPU, pushes and pulls go device to device; else through the transport.
  void welcome(int worker, const Message& hello) {
    WorkerState& state = workers_[static_cast<size_t>(worker)];
    state.hello = true;
    state.holds = at::Tensor();  // a hello comes with parameters of its own: the next reply is whole
    state.answered = false;
    Message answer;
    answer.type = MessageType::kWelcome;
    bool same_host = hello.blob == this_host_name() + "\ncuda";
    if (spec_.param_server.transport == "auto" && same_host && device_.is_cuda() &&
        gpu::shared_device_memory_available()) {
      if (!state.shared) state.shared = std::make_unique<SharedBoxes>(hello.count, device_);
      answer.blob = state.shared->inbox.handle() + state.shared->outbox.handle();
    }
    socket_.send(worker, answer);
  }

  // A restart: the range's parameters and optimiser state as the run's
  // committed checkpoint holds them (worker 0's file: the parameters, the
  // workers' optimiser buffers, its step count), through initialise().
  void restore_from_checkpoint() {
    const std::string& out = spec_.train.output;
    int64_t step = committed_checkpoint(out)["step"].get<int64_t>();
    WorkerCheckpoint run = read_worker_checkpoint(out, 0, step);
    const size_t moments = static_cast<size_t>(FlatOptimizer::moment_buffers(spec_.train.optimizer));
    if (run.values.value("replica_tensors", size_t{0}) != moments + 2 || run.tensors.size() < moments + 2) {
      throw InputError(worker_checkpoint_file(out, 0, step), "", "the run's parameters and optimiser state");
    }
    auto [begin, end] = shard_range(run.tensors[0].numel(), spec_.servers, index_);
    std::vector<at::Tensor> parts;
    for (size_t m = 0; m <= moments; ++m) parts.push_back(run.tensors[m].reshape({-1}).narrow(0, begin, end - begin));
    Message init;
    init.step = run.tensors[moments + 1].item<int64_t>();
    init.payload = at::cat(parts).to(at::kFloat).contiguous();
    initialise(init);
    std::fprintf(stderr, "%s: restarted from the checkpoint of step %lld\n", name_.c_str(),
                 static_cast<long long>(step));
  }

  // Marks done the workers that said so in the rendezvous (their kDone may
  // have gone to this server's first process). The store lives in worker
  // 0: once that has ended, its kDone came here or to no one.
  void count_workers_done() {
    for (size_t w = 0; w < workers_.size(); ++w) {
      if (workers_[w].done || workers_[w].hello) continue;
      bool said_done = false;
      try {
        said_done = rendezvous_.has(worker_done_key(static_cast<int64_t>(w)));
      } catch (const std::exception&) {
        return;
      }
      if (!said_done) continue;
      workers_[w].done = true;
      ++done_;
    }
  }

  void initialise(const Message& message) {
    // The payload carries the workers' optimiser state; the server's own
    // optimiser (momentum compensation) may keep fewer buffers.
    int moments = FlatOptimizer::moment_buffers(spec_.train.optimizer);
    int64_t total = message.payload.numel();
    if (total % (1 + moments) != 0) {
      throw std::runtime_error(name_ + ": initial state of " + std::to_string(total) +
                               " floats does not split into " + std::to_string(1 + moments) + " buffers");
    }
    int64_t size = total / (1 + moments);
    at::Tensor state_in = message.payload.to(device_);
    values_ = state_in.narrow(0, 0, size).clone();
    gradients_ = at::zeros_like(values_);
    sum_ = at::zeros_like(values_);
    scratch_ = int8() ? at::empty({int8_packed_bytes(size)}, host_options(at::kByte))
                      : at::empty({size}, host_options(compressed() ? at::kBFloat16 : at::kFloat));
    optimizer_ = std::make_unique<FlatOptimizer>(
        values_, gradients_, server_optimizer(spec_.train.optimizer, spec_.param_server, spec_.workers));
    auto state = optimizer_->state();
    int kept = std::min(moments, static_cast<int>(state.size()) - 1);
    for (int m = 0; m < kept; ++m) state[m].copy_(state_in.narrow(0, (1 + m) * size, size));
    state.back().fill_(message.step);
    initialized_ = true;
  }

  // Answers a kSnapshot with what a kInit carries: the key range's
  // parameters, then one buffer per moment of the workers' optimiser (this
  // server's own where it keeps it, zeros where momentum compensation left
  // it none), and the optimiser's step count.
  void send_state(int worker) {
    if (!initialized_) throw std::runtime_error(name_ + ": snapshot before init");
    int moments = FlatOptimizer::moment_buffers(spec_.train.optimizer);
    auto state = optimizer_->state();
    std::vector<at::Tensor> parts{values_};
    for (int m = 0; m < moments; ++m) {
      parts.push_back(m + 1 < static_cast<int>(state.size()) ? state[m] : at::zeros_like(values_));
    }
    Message answer;
    answer.type = MessageType::kState;
    answer.step = state.back().item<int64_t>();
    answer.payload = at::cat(parts).to(at::kCPU).contiguous();
    socket_.send(worker, answer);
  }

  // The pushed gradients, on this server's device (8-bit codes unpacked there).
  at::Tensor gradients_of(int worker, const Message& message) {
    const auto& shared = workers_[static_cast<size_t>(worker)].shared;
    at::Tensor pushed = shared ? shared->inbox.tensor() : message.payload;
    const bool packed = pushed.defined() && pushed.scalar_type() == at::kByte;
    const int64_t expected = packed ? int8_packed_bytes(values_.numel()) : values_.numel();
    if (!pushed.defined() || pushed.numel() != expected) {
      throw std::runtime_error(name_ + ": push of " + std::to_string(pushed.defined() ? pushed.numel() : 0) +
                               (packed ? " packed bytes" : " floats") + " from worker " + std::to_string(worker) +
                               ", expected " + std::to_string(expected));
    }
    // To the device first, then converted there: a copy_ from the host that
    // also changes the type converts on the CPU, into pageable memory.
    return packed ? unpack_int8(pushed, values_.numel(), device_) : pushed.to(device_);
  }

  void push(int worker, const Message& message) {
    if (!initialized_) throw std::runtime_error(name_ + ": push before init");
    Stopwatch updating;
    at::Tensor pushed = gradients_of(worker, message);
    ++report_.pushes;
    const WorkerState& pusher = workers_[static_cast<size_t>(worker)];
    const int64_t staleness =
        report_.updates - (spec_.param_server.overlap ? pusher.pulled_before : pusher.pulled_update);
    report_.staleness_sum += staleness;
    const std::string& mode = spec_.param_server.mode;
    if (mode == "sync") {
      sum_.add_(pushed);
      held_.push_back(HeldReply{worker, clock_now(), message.step + 1});
      last_lr_ = message.lr;
      report_.update_s += updating.elapsed_s();
      complete_sync_round();
      return;
    }
    gradients_.copy_(pushed);
    // Staleness-aware (Zhang et al., 2016): a gradient computed `staleness`
    // updates ago steps lr / staleness.
    const bool damped = spec_.param_server.staleness_lr && staleness > 1;
    optimizer_->step(damped ? message.lr / static_cast<double>(staleness) : message.lr);
    ++report_.updates;
    report_.update_s += updating.elapsed_s();
    if (mode == "async") {
      reply({worker}, 0);
      return;
    }
    workers_[static_cast<size_t>(worker)].clock = message.step + 1;
    held_.push_back(HeldReply{worker, clock_now(), message.step + 1});
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
    answer_held([](const HeldReply&) { return true; });
  }

  // SSP: answers every held worker that is at most `staleness` steps ahead
  // of the slowest unfinished worker (a worker not yet heard from is at 0).
  void release_ssp() {
    if (spec_.param_server.mode != "ssp") return;
    int64_t slowest = INT64_MAX;
    for (const auto& w : workers_) {
      if (!w.done) slowest = std::min(slowest, w.hello ? w.clock : 0);
    }
    answer_held([&](const HeldReply& h) {
      return slowest == INT64_MAX || h.clock - slowest <= spec_.param_server.staleness;
    });
  }

  template <typename Ready>
  void answer_held(Ready ready) {
    std::vector<HeldReply> still;
    double now = clock_now();
    std::vector<int> answer;
    double longest = 0;
    for (const auto& h : held_) {
      if (ready(h)) {
        answer.push_back(h.worker);
        report_.held_s += now - h.since;
        longest = std::max(longest, now - h.since);
      } else {
        still.push_back(h);
      }
    }
    held_ = std::move(still);
    reply(answer, longest);
  }

  // A worker connection closed while the worker had not said it was done:
  // it died. The message names it, or every worker not done when the
  // connection that closed never carried a message.
  void check_disconnections() {
    if (socket_.disconnections() <= done_) {
      closed_early_.restart();
      closed_early_seen_ = false;
      return;
    }
    if (!closed_early_seen_) {
      closed_early_seen_ = true;
      closed_early_.restart();
      return;
    }
    if (closed_early_.elapsed_s() < kDoneGraceS) return;
    std::string gone;
    for (int w : socket_.closed_workers()) {
      if (workers_[static_cast<size_t>(w)].done) continue;
      gone += ' ';
      gone += std::to_string(w);
    }
    if (!gone.empty()) {
      throw std::runtime_error(name_ + ": the connection of worker" + gone + " closed before it was done");
    }
    throw std::runtime_error(name_ + ": a worker's connection closed before it was done (workers not done:" +
                             missing_workers([](const WorkerState& w) { return !w.done; }) + ")");
  }

  void check_stalled() {
    if (held_.empty()) return;
    std::string missing = missing_workers([&](const WorkerState& w) {
      int index = static_cast<int>(&w - workers_.data());
      return !w.done && std::none_of(held_.begin(), held_.end(), [&](const HeldReply& h) { return h.worker == index; });
    });
    throw std::runtime_error(name_ + ": workers" + missing + " sent nothing for " +
                             std::to_string(spec_.timeout_s) + " s while others waited on them");
  }

  template <typename Predicate>
  std::string missing_workers(Predicate matches) const {
    std::string list;
    for (size_t w = 0; w < workers_.size(); ++w) {
      if (!matches(workers_[w])) continue;
      list += ' ';  // appended, not " " + ...: GCC 12 misreads that as an overflowing copy
      list += std::to_string(w);
    }
    return list;
  }

  // Sends the key range's parameters to `workers`: into each one's shared
  // outbox; through the transport, one float32 host copy for all, or with
  // compression each worker what it lacks, as bfloat16.
  void reply(const std::vector<int>& workers, double hold_s) {
    Stopwatch replying;
    at::Tensor whole;
    std::vector<at::Tensor> payloads;
    bool wrote_shared = false;
    for (int w : workers) {
      WorkerState& state = workers_[static_cast<size_t>(w)];
      if (state.shared) {
        state.shared->outbox.tensor().copy_(values_);
        wrote_shared = true;
        payloads.emplace_back();
      } else if (int8() && state.holds.defined()) {
        at::Tensor packed = pack_int8(values_ - state.holds);
        state.holds.add_(unpack_int8(packed, values_.numel(), device_));  // what the worker's add gives
        state.reply_host = reusable(state.reply_host, at::kByte, packed.numel());
        state.reply_host.copy_(packed);
        payloads.push_back(state.reply_host);
      } else if (compressed() && state.holds.defined()) {
        at::Tensor change = (values_ - state.holds).to(at::kBFloat16);
        state.holds.add_(change);  // what the worker's add of the same bfloat16 gives, bit for bit
        state.reply_host = reusable(state.reply_host, at::kBFloat16);
        state.reply_host.copy_(change);
        payloads.push_back(state.reply_host);
      } else {
        if (!whole.defined()) {
          whole = reusable(whole_host_, at::kFloat);
          whole.copy_(values_);
          whole_host_ = whole;
        }
        if (compressed() || int8()) state.holds = values_.clone();
        payloads.push_back(whole);
      }
    }
    if (wrote_shared) gpu::finish_writes_for_other_processes(device_);
    for (size_t i = 0; i < workers.size(); ++i) {
      WorkerState& peer = workers_[static_cast<size_t>(workers[i])];
      peer.pulled_before = peer.answered ? peer.pulled_update : report_.updates;
      peer.pulled_update = report_.updates;
      peer.answered = true;
      Message message;
      message.type = MessageType::kParams;
      message.hold_s = hold_s;
      message.payload = payloads[i];
      socket_.send(workers[i], message);
    }
    report_.reply_s += replying.elapsed_s();
  }

  bool compressed() const { return spec_.param_server.compression == "bf16"; }
  bool int8() const { return spec_.param_server.compression == "int8"; }

  at::TensorOptions host_options(at::ScalarType type) const {
    return at::TensorOptions().dtype(type).pinned_memory(device_.is_cuda());
  }

  // `buffer` again when no message still being sent holds it (the transport
  // keeps a reference until its I/O thread has written the frame), else a
  // new one of `size` elements (< 0: the range's size).
  at::Tensor reusable(const at::Tensor& buffer, at::ScalarType type, int64_t size = -1) const {
    if (size < 0) size = values_.numel();
    if (buffer.defined() && buffer.use_count() == 1 && buffer.numel() == size) return buffer;
    return at::empty({size}, host_options(type));
  }

  double clock_now() const { return uptime_.elapsed_s(); }

  const ClusterSpec& spec_;
  Rendezvous& rendezvous_;
  bool restarted_ = false;
  int64_t index_;
  c10::Device device_;
  std::string name_;
  ServerSocket socket_;
  Stopwatch uptime_;
  std::vector<WorkerState> workers_;
  std::vector<int> waiting_for_init_;
  std::vector<HeldReply> held_;
  bool initialized_ = false;
  int64_t done_ = 0;
  double last_lr_ = 0;
  Stopwatch closed_early_;
  bool closed_early_seen_ = false;
  at::Tensor values_, gradients_, sum_, scratch_;
  at::Tensor whole_host_;  // the pinned buffer float32 replies go out from
  std::unique_ptr<FlatOptimizer> optimizer_;
  ServerReport report_;
};

}  // namespace

std::string server_address_key(int64_t index) { return "ps/server/" + std::to_string(index); }

std::string worker_done_key(int64_t worker) { return "ps/done/" + std::to_string(worker); }

std::string servers_started_key() { return "ps/started"; }

ServerReport run_param_server(const ClusterSpec& spec, Rendezvous& rendezvous, int64_t index, c10::Device device) {
  Server server(spec, rendezvous, index, device);
  return server.serve();
}

}  // namespace colo::dist
