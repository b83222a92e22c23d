#include "colo/data/shared_loader.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include <zmq.hpp>

#include "colo/core/files.h"
#include "colo/core/loader_start_group.h"
#include "colo/core/stopwatch.h"
#include "colo/data/loader_protocol.h"
#include "colo/data/pixel_normalise.h"
#include "colo/data/shared_ring.h"

namespace colo::data {
namespace {

void send_json(zmq::socket_t& socket, const nlohmann::json& body) {
  socket.send(zmq::buffer(body.dump()), zmq::send_flags::none);
}

// Waits up to `timeout_s` for one reply, in slices so `give_up` is checked.
// Returns null on timeout or when give_up() says so. A signal that
// interrupts the wait (EINTR: Ctrl-C in a Python job) only ends its slice.
template <typename GiveUp>
nlohmann::json receive_json(zmq::socket_t& socket, double timeout_s, GiveUp give_up) {
  Stopwatch waited;
  while (waited.elapsed_s() < timeout_s && !give_up()) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::message_t message;
    try {
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if ((item.revents & ZMQ_POLLIN) && socket.recv(message, zmq::recv_flags::dontwait)) {
        return nlohmann::json::parse(message.to_string(), nullptr, false);
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
  return nullptr;
}

// `seconds` as a message names them: 0.5 s, 10 s (not cut to an int).
std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << seconds << " s";
  return text.str();
}

zmq::socket_t dealer(zmq::context_t& context, const std::string& address) {
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 200);
  try {
    socket.connect(address);
  } catch (const zmq::error_t& e) {
    throw std::invalid_argument("shared loader: cannot connect to '" + address + "': " + e.what() +
                                " (expected ipc://PATH or tcp://HOST:PORT)");
  }
  return socket;
}

}  // namespace

void check_loader_address(const std::string& address) {
  zmq::context_t context;
  zmq::socket_t socket = dealer(context, address);
  socket.set(zmq::sockopt::linger, 0);
  socket.close();
}

namespace {

// The producer at `address`'s answer to `request` when its op is `answer`;
// nullopt when none comes within `timeout_s` (at once for an ipc:// path
// that does not exist).
std::optional<nlohmann::json> ask_producer(const std::string& address, const nlohmann::json& request,
                                           const std::string& answer, double timeout_s) {
  check_loader_address(address);
  const std::string ipc = "ipc://";
  const std::string path = address.rfind(ipc, 0) == 0 ? address.substr(ipc.size()) : "";
  if (!path.empty() && path[0] != '@' && !path_exists(path)) return std::nullopt;  // no one listens there
  zmq::context_t context;
  zmq::socket_t socket = dealer(context, address);
  socket.set(zmq::sockopt::linger, 0);
  send_json(socket, request);
  nlohmann::json reply = receive_json(socket, timeout_s, [] { return false; });
  socket.close();
  if (!reply.is_object() || reply.value("op", "") != answer) return std::nullopt;
  return reply;
}

}  // namespace

std::optional<nlohmann::json> query_loader_stats(const std::string& address, double timeout_s) {
  return ask_producer(address, {{"op", "stats"}}, "stats", timeout_s);
}

std::optional<double> hold_loader(const std::string& address, double seconds, double timeout_s) {
  auto held = ask_producer(address, {{"op", "hold"}, {"seconds", seconds}}, "held", timeout_s);
  return held ? std::optional<double>(held->value("held_s", 0.0)) : std::nullopt;
}

struct SharedLoaderClient::Connection {
  std::string address;
  zmq::context_t context;
  zmq::socket_t socket;
  std::unique_ptr<SharedRing> ring;
};

SharedLoaderClient::SharedLoaderClient(const std::string& address, int64_t batch_size, double timeout_s,
                                       std::function<void()> wait_check)
    : batch_size_(batch_size), timeout_s_(timeout_s), wait_check_(std::move(wait_check)) {
  if (batch_size <= 0) throw std::invalid_argument("shared loader: batch size must be positive");
  if (const char* group = std::getenv(kLoaderStartGroupVariable)) start_group_ = group;
  connection_ = std::make_unique<Connection>();
  connection_->address = address;
  connection_->socket = dealer(connection_->context, address);
  zmq::socket_t& socket = connection_->socket;
  send_json(socket, {{"op", "hello"}});
  nlohmann::json welcome;
  for (Stopwatch connecting; welcome.is_null() && connecting.elapsed_s() < timeout_s;) {
    welcome = receive_json(socket, std::min(0.2, timeout_s - connecting.elapsed_s()), [] { return false; });
    if (welcome.is_null() && wait_check_) wait_check_();
  }
  if (!welcome.is_object() || welcome.value("op", "") != "welcome") {
    throw ProducerLost("shared loader: no producer answered at " + address + " within " +
                       seconds_text(timeout_s) + " (is `colo loader serve` running?)");
  }
  id_ = welcome["consumer"].get<int64_t>();
  shape_ = welcome["shape"].get<std::vector<int64_t>>();
  mean_ = welcome["mean"].get<std::vector<double>>();
  std_ = welcome["std"].get<std::vector<double>>();
  classes_ = welcome["classes"].get<int64_t>();
  class_names_ = welcome.value("class_names", std::vector<std::string>{});
  epoch_samples_ = welcome["epoch_samples"].get<int64_t>();
  chunk_ = welcome["chunk"].get<int64_t>();
  slots_ = welcome["slots"].get<int64_t>();
  if (welcome.contains("device_ring")) device_ring_ = welcome["device_ring"];
  const double beat_every_s = std::min(1.0, welcome.value("heartbeat_timeout_s", 10.0) / 4);
  sample_bytes_ = shape_[0] * shape_[1] * shape_[2];
  connection_->ring = std::make_unique<SharedRing>(SharedRing::open(
      welcome["ring"].get<std::string>(), welcome["slots"].get<int64_t>(), welcome["slot_bytes"].get<int64_t>()));
  pixels_.resize(static_cast<size_t>(chunk_ * sample_bytes_));
  labels_.resize(static_cast<size_t>(chunk_));
  // No request yet: a consumer holds the producer's ring from its first
  // batch on, not while its job is still starting (building its model).
  beats_ = std::thread([this, beat_every_s] {
    zmq::socket_t beat = dealer(connection_->context, connection_->address);
    int64_t released = 0;  // the newest release_soon sent
    while (!stop_beats_) {
      send_json(beat, {{"op", "beat"}, {"consumer", id_}, {"samples", reported_samples_.load()},
                       {"wait_s", reported_wait_s_.load()}, {"elapsed_s", started_.elapsed_s()}});
      nlohmann::json reply = receive_json(beat, timeout_s_, [this] { return stop_beats_.load(); });
      if (stop_beats_) break;
      if (!reply.is_object() || reply.value("op", "") != "alive") {
        lost_reason_ = reply.is_object() ? "the producer at " + connection_->address + " answered: " +
                                               reply.value("message", reply.dump())
                                         : "the producer at " + connection_->address + " stopped answering for " +
                                               seconds_text(timeout_s_) + " (killed or stopped?)";
        producer_lost_ = true;
        break;
      }
      // Until the next beat: releases from release_soon go out as they come.
      Stopwatch slept;
      while (!stop_beats_ && slept.elapsed_s() < beat_every_s) {
        const int64_t keep = released_soon_.load();
        if (keep > released) {
          send_json(beat, {{"op", "release"}, {"consumer", id_}, {"keep", keep}});
          released = keep;
        }
        std::unique_lock<std::mutex> lock(beat_mutex_);
        beat_wake_.wait_for(lock, std::chrono::milliseconds(50),
                            [&] { return stop_beats_.load() || released_soon_.load() > released; });
      }
    }
    beat.close();
  });
}

SharedLoaderClient::~SharedLoaderClient() {
  {
    std::lock_guard<std::mutex> lock(beat_mutex_);
    stop_beats_ = true;
  }
  beat_wake_.notify_all();
  if (beats_.joinable()) beats_.join();
  if (connection_) {
    try {
      send_json(connection_->socket, {{"op", "bye"}, {"consumer", id_}, {"samples", samples_}, {"wait_s", wait_s_},
                                      {"elapsed_s", started_.elapsed_s()}});
    } catch (const zmq::error_t&) {
    }
    connection_->socket.close();
  }
}

void SharedLoaderClient::request(int64_t seq) {
  nlohmann::json next = {{"op", "next"}, {"consumer", id_}, {"seq", seq}};
  if (!asked_ && !start_group_.empty()) {
    next["start_group"] = start_group_;
    if (const char* job = std::getenv(kJobIdVariable)) next["job"] = job;  // the group counts jobs
  }
  seq_ = seq;
  asked_ = true;
  outstanding_ = true;
  asked_in_place_ = in_place_;
  next["span"] = chunks_per_batch();
  if (in_place_) next["keep"] = std::max(keep_, released_soon_.load());
  send_json(connection_->socket, next);
}

void SharedLoaderClient::start_reading() {
  if (asked_) return;
  request(0);
  first_reply_ = receive_reply();  // the producer holds our place once it has answered
}

nlohmann::json SharedLoaderClient::receive_reply() {
  Stopwatch waiting;
  nlohmann::json reply;
  try {
    while (reply.is_null()) {
      if (producer_lost_) throw ProducerLost("shared loader: " + lost_reason_);
      reply = receive_json(connection_->socket, 0.2, [] { return false; });
      if (reply.is_null() && wait_check_) wait_check_();
    }
  } catch (...) {  // lost, or interrupted: the time still counts as waiting
    wait_s_ += waiting.elapsed_s();
    throw;
  }
  wait_s_ += waiting.elapsed_s();
  return reply;
}

void SharedLoaderClient::release_before(int64_t seq) {
  if (seq <= keep_) return;
  keep_ = seq;
  send_json(connection_->socket, {{"op", "release"}, {"consumer", id_}, {"keep", keep_}});
}

void SharedLoaderClient::release_soon(int64_t seq) {
  int64_t was = released_soon_.load();
  while (was < seq && !released_soon_.compare_exchange_weak(was, seq)) {
  }
  {
    std::lock_guard<std::mutex> lock(beat_mutex_);  // the heartbeat thread cannot miss the wake
  }
  beat_wake_.notify_all();
}

int64_t SharedLoaderClient::slot_bytes() const { return connection_->ring->slot_bytes(); }

int64_t SharedLoaderClient::pixels_offset() const { return loader_slot_pixels_offset(chunk_); }

const uint8_t* SharedLoaderClient::host_slot(int64_t slot) const { return connection_->ring->slot(slot); }

int64_t SharedLoaderClient::chunk_in_slot(int64_t slot) const {
  std::atomic_thread_fence(std::memory_order_acquire);
  return *reinterpret_cast<const volatile int64_t*>(host_slot(slot));
}

void SharedLoaderClient::fetch_chunk(bool copy_pixels) {
  start_reading();
  if (!outstanding_) request(seq_);
  for (;;) {
    nlohmann::json reply = first_reply_.is_null() ? receive_reply() : std::exchange(first_reply_, nullptr);
    outstanding_ = false;
    if (!reply.is_object() || reply.value("op", "") != "chunk") {
      throw ProducerLost("shared loader: the producer at " + connection_->address + " refused: " +
                         (reply.is_object() ? reply.value("message", reply.dump()) : std::string("bad reply")));
    }
    const int64_t seq = reply["seq"].get<int64_t>(), count = reply["count"].get<int64_t>();
    skipped_ += reply.value("skipped", int64_t{0});
    if (in_place_ && !asked_in_place_) {  // start_reading asked as a copier: the producer would not hold it for us
      request(seq);
      continue;
    }
    const int64_t slot_index = reply["slot"].get<int64_t>();
    const uint8_t* slot = connection_->ring->slot(slot_index);
    auto header = [&] { return chunk_in_slot(slot_index); };
    if (header() != seq) {  // overwritten: we were left behind; ask again
      request(seq);
      continue;
    }
    std::memcpy(labels_.data(), slot + sizeof(int64_t), static_cast<size_t>(count) * sizeof(int64_t));
    if (copy_pixels) {
      std::memcpy(pixels_.data(), slot + pixels_offset(), static_cast<size_t>(count * sample_bytes_));
    }
    if (header() != seq) {
      request(seq);
      continue;
    }
    have_ = count;
    used_ = 0;
    chunk_seq_ = seq;
    chunk_slot_ = slot_index;
    // Copied out: done with this one, and the next comes while we train.
    // Read in place: still ours until released; the next comes while we
    // train too where the ring has room for the slot its answer holds.
    if (in_place_) {
      seq_ = seq + 1;
      if (prefetches_in_place()) request(seq_);
    } else {
      keep_ = seq + 1;
      request(seq + 1);
    }
    return;
  }
}

std::vector<RingPiece> SharedLoaderClient::next_batch_pieces(int64_t* labels) {
  if (batches_ > 0 && !in_place_) throw std::logic_error("shared loader: next_batch_pieces after next_batch");
  in_place_ = true;
  std::vector<RingPiece> pieces;
  int64_t filled = 0;
  while (filled < batch_size_) {
    // A consumer that held its chunk past the producer's stall_s was left
    // behind and its slot reused: drop the rest of that chunk.
    if (used_ < have_ && chunk_in_slot(chunk_slot_) != chunk_seq_) {
      have_ = used_;
      ++skipped_;
    }
    if (used_ == have_) fetch_chunk(false);
    int64_t take = std::min(batch_size_ - filled, have_ - used_);
    pieces.push_back(RingPiece{chunk_seq_, chunk_slot_, used_, take});
    if (labels) std::memcpy(labels + filled, labels_.data() + used_, static_cast<size_t>(take) * sizeof(int64_t));
    filled += take;
    used_ += take;
  }
  count_batch();
  return pieces;
}

void SharedLoaderClient::next_batch_normalised(float* pixels, int64_t* labels, const float* scale,
                                               const float* shift) {
  const int64_t channels = shape_[0], plane = shape_[1] * shape_[2];
  if (!batch_fits_in_place()) {  // held in place, its chunks would stop the producer for good
    staging_.resize(static_cast<size_t>(batch_size_ * sample_bytes_));
    next_batch(staging_.data(), labels);
    normalise_pixels(staging_.data(), batch_size_, channels, plane, scale, shift, pixels);
    return;
  }
  for (;;) {
    std::vector<RingPiece> pieces = next_batch_pieces(labels);
    int64_t filled = 0;
    bool intact = true;
    for (const RingPiece& p : pieces) {
      normalise_pixels(host_slot(p.slot) + pixels_offset() + p.first * sample_bytes_, p.count, channels, plane, scale,
                       shift, pixels + filled * sample_bytes_);
      filled += p.count;
      // Left behind while reading (held past stall_s): the slot was reused.
      intact = intact && chunk_in_slot(p.slot) == p.seq;
    }
    release_before(current_chunk());
    if (intact) return;
    ++skipped_;  // read another batch in its place; this one does not count
    --batches_;
    samples_ -= batch_size_;
  }
}

void SharedLoaderClient::next_batch(uint8_t* pixels, int64_t* labels) {
  if (in_place_) throw std::logic_error("shared loader: next_batch after next_batch_pieces");
  int64_t filled = 0;
  while (filled < batch_size_) {
    if (used_ == have_) fetch_chunk(true);
    int64_t take = std::min(batch_size_ - filled, have_ - used_);
    std::memcpy(pixels + filled * sample_bytes_, pixels_.data() + used_ * sample_bytes_,
                static_cast<size_t>(take * sample_bytes_));
    std::memcpy(labels + filled, labels_.data() + used_, static_cast<size_t>(take) * sizeof(int64_t));
    filled += take;
    used_ += take;
  }
  count_batch();
}

void SharedLoaderClient::count_batch() {
  ++batches_;
  samples_ += batch_size_;
  reported_samples_ = samples_;
  reported_wait_s_ = wait_s_;
}

nlohmann::json SharedLoaderClient::stats() const {
  double elapsed = started_.elapsed_s();
  return {{"consumer", id_},         {"batches", batches_}, {"samples", samples_},
          {"wait_s", wait_s_},       {"elapsed_s", elapsed}, {"samples_per_s", samples_ / std::max(elapsed, 1e-9)},
          {"chunks_skipped", skipped_}};
}

}  // namespace colo::data
