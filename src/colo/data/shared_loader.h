#pragma once
// A shared loader's consumer: connects to a producer (loader_server.h),
// maps its ring and cuts batches of its own size from the chunk stream.
// Used by `colo.data.SharedLoader` and by benchmarks.

#include <atomic>
#include <condition_variable>
#include <stdexcept>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/core/stopwatch.h"

namespace colo::data {

// The producer stopped answering (died or was stopped). The message names
// the address; training code should checkpoint-and-exit, not retry blindly.
struct ProducerLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws std::invalid_argument naming `address` when it is no ZeroMQ
// address a consumer could connect to (ipc://PATH, tcp://HOST:PORT).
void check_loader_address(const std::string& address);

// The counters of the producer at `address` (LoaderServer::stats), or
// nullopt when none answers within `timeout_s` (at once for an ipc:// path
// that does not exist). Registers no consumer. Throws
// std::invalid_argument for a malformed address.
std::optional<nlohmann::json> query_loader_stats(const std::string& address, double timeout_s);

// Asks the producer at `address` to count as read for `seconds` more (at
// most 600): what a scheduler does before launching jobs that will read
// from a producer it did not start, so that the scheduler that started it
// does not stop it, nor does it exit idle, before they connect. Returns the
// seconds it is now held for, or nullopt when none answers within
// `timeout_s`. Throws std::invalid_argument for a malformed address.
std::optional<double> hold_loader(const std::string& address, double seconds, double timeout_s);

// Samples `first` .. `first + count - 1` of chunk `seq`, which lies in ring
// slot `slot`: one piece of a batch read in place (next_batch_pieces).
struct RingPiece {
  int64_t seq = 0;
  int64_t slot = 0;
  int64_t first = 0;
  int64_t count = 0;
};

class SharedLoaderClient {
 public:
  // Connects and maps the ring. Throws ProducerLost when no producer answers
  // at `address` within `timeout_s`. A heartbeat thread keeps the consumer
  // registered while the caller trains; if the producer is silent for
  // `timeout_s`, the next call throws ProducerLost. `wait_check`, when
  // given, is called on the calling thread about every 0.2 s that a call
  // (connecting included) waits for the producer; whatever it throws ends
  // the wait and leaves the call (colo.data passes Python's signal check,
  // so that Ctrl-C interrupts a wait). The consumer stays usable after
  // that: a request in flight is answered at its next call.
  // With $COLO_LOADER_START_GROUP set (by colo's scheduler, for the jobs it
  // launched together on this producer), the first request says so: the
  // producer gives the group their first chunks together.
  SharedLoaderClient(const std::string& address, int64_t batch_size, double timeout_s = 10,
                     std::function<void()> wait_check = {});
  ~SharedLoaderClient();  // says goodbye, so the producer stops waiting for it
  SharedLoaderClient(const SharedLoaderClient&) = delete;
  SharedLoaderClient& operator=(const SharedLoaderClient&) = delete;

  // Fills the next `batch_size` samples: uint8 [B, C, H, W] into `pixels`
  // and int64 labels into `labels`. Blocks while the producer is behind
  // (that time is counted as waiting).
  void next_batch(uint8_t* pixels, int64_t* labels);

  // For consumers that copy the samples themselves (from the producer's
  // device ring, device_ring()): the next batch's labels into `labels`
  // (unless null) and where its samples lie, with no copy of them. The
  // chunks of the pieces stay the consumer's until it calls release_before
  // (or release_soon); the producer waits for it (or leaves it behind
  // after its stall_s). Once a chunk is read the next is asked for at once,
  // so that its answer comes while the batch trains, when the ring has room
  // for it beside two batches' chunks (prefetches_in_place); with a smaller
  // ring only when a batch needs it, so that a consumer between batches
  // holds none it has not read. Use either this or next_batch on one
  // client, not both.
  std::vector<RingPiece> next_batch_pieces(int64_t* labels);
  // The next batch normalised into float32 `pixels` ([batch, C, H, W]:
  // pixel * scale[c] + shift[c], see normalise_pixels) and int64 `labels`.
  // When the ring can hold a batch's chunks (batch_fits_in_place), straight
  // from the ring with no copy in between, its chunks going back to the
  // producer on return (in-place reads: not together with next_batch);
  // otherwise through a copy, chunk by chunk, as next_batch reads. Throws
  // as next_batch does.
  void next_batch_normalised(float* pixels, int64_t* labels, const float* scale, const float* shift);
  // Done with every chunk before `seq`: the producer may reuse their slots.
  void release_before(int64_t seq);
  // The same from any thread (one whose copies from the ring finished):
  // the heartbeat thread tells the producer at once, and the next request
  // carries it too.
  void release_soon(int64_t seq);
  // Asks for the first batch now rather than at the first next_batch, and
  // returns once the producer has answered: from here on this consumer
  // holds the producer's ring (consumers that all call this before any of
  // them reads see the same stream). Does nothing once asked.
  void start_reading();
  // The oldest chunk the next batch reads (the current one, while it has
  // samples left).
  int64_t current_chunk() const { return used_ < have_ ? chunk_seq_ : chunk_seq_ + 1; }
  // Chunks a batch may span: an unaligned start and a pass's short last
  // chunk add two.
  int64_t chunks_per_batch() const { return (batch_size_ + chunk_ - 1) / chunk_ + 2; }
  int64_t slots() const { return slots_; }
  // Whether the ring holds every chunk a batch may span at once, so that
  // the batch can be read in place; a larger one must be copied out chunk
  // by chunk (a consumer that holds its chunks until its device copies are
  // done needs one slot more: DeviceRingReader).
  bool batch_fits_in_place() const { return chunks_per_batch() <= slots_; }
  // Whether an in-place reader asks for its next chunk as soon as it has
  // read one: the ring holds two batches' chunks (one still copying on the
  // device, DeviceRingReader) and the chunk asked for, with a slot to spare.
  bool prefetches_in_place() const { return 2 * chunks_per_batch() + 1 < slots_; }
  // The producer's device ring (handle, device, bytes), or null when it
  // keeps its ring only in host memory.
  const nlohmann::json& device_ring() const { return device_ring_; }
  // The ring's geometry, for reading pieces: bytes per slot, where a slot's
  // samples start, bytes per sample.
  int64_t slot_bytes() const;
  int64_t pixels_offset() const;
  int64_t sample_bytes() const { return sample_bytes_; }
  // A slot's bytes in the host ring (the pieces' samples lie at
  // pixels_offset() + first * sample_bytes()).
  const uint8_t* host_slot(int64_t slot) const;

  int64_t batch_size() const { return batch_size_; }
  std::vector<int64_t> sample_shape() const { return shape_; }  // {C, H, W}
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& std() const { return std_; }
  int64_t classes() const { return classes_; }
  // The class folders' names, label order (empty from a producer too old to send them).
  const std::vector<std::string>& class_names() const { return class_names_; }
  // Images in one pass of the producer's data set.
  int64_t epoch_samples() const { return epoch_samples_; }
  // Batches in one pass over the data set (its size over the batch size,
  // rounded down): what `len()` of a loader reports.
  int64_t batches_per_epoch() const { return epoch_samples_ / batch_size_; }

  // Consumer counters: batches, samples, seconds waited for data, seconds
  // since connecting, chunks skipped by falling behind.
  nlohmann::json stats() const;

 private:
  struct Connection;
  void fetch_chunk(bool copy_pixels);
  // The producer's next reply (time spent counts as waiting for data).
  nlohmann::json receive_reply();
  void count_batch();  // a batch served: the counters the heartbeat reports
  // The header of a host slot: the chunk it holds once complete (-1 while filled).
  int64_t chunk_in_slot(int64_t slot) const;
  void request(int64_t seq);

  std::unique_ptr<Connection> connection_;
  int64_t batch_size_;
  double timeout_s_;
  std::function<void()> wait_check_;  // see the constructor
  int64_t id_ = 0;
  std::vector<int64_t> shape_;
  std::vector<double> mean_, std_;
  int64_t classes_ = 0, epoch_samples_ = 0, chunk_ = 0, sample_bytes_ = 0, slots_ = 0;
  std::vector<std::string> class_names_;
  std::vector<uint8_t> pixels_;   // the current chunk's samples, copied out of the ring
  std::vector<uint8_t> staging_;  // a batch too large to read in place, before normalising
  std::vector<int64_t> labels_;
  int64_t have_ = 0, used_ = 0;   // samples in the current chunk, samples taken
  int64_t seq_ = 0;               // the chunk requested next
  bool asked_ = false;            // a request was sent (the first batch was asked for)
  std::string start_group_;       // $COLO_LOADER_START_GROUP, sent with the first request
  bool outstanding_ = false;      // a request's reply is still to be read
  bool asked_in_place_ = false;   // the last request said which chunks we keep (so the producer holds them)
  nlohmann::json first_reply_;    // start_reading's answer, for the first fetch_chunk
  int64_t chunk_seq_ = -1, chunk_slot_ = 0;  // the current chunk and its slot
  int64_t keep_ = 0;              // the oldest chunk still in use (pieces read in place)
  bool in_place_ = false;         // next_batch_pieces was used
  nlohmann::json device_ring_;
  int64_t batches_ = 0, samples_ = 0, skipped_ = 0;
  double wait_s_ = 0;
  // What the heartbeat thread reports: samples_ and wait_s_ as of the last batch.
  std::atomic<int64_t> reported_samples_{0};
  std::atomic<double> reported_wait_s_{0};
  Stopwatch started_;  // since connecting
  std::atomic<bool> producer_lost_{false};
  std::string lost_reason_;  // set by the heartbeat thread before producer_lost_
  std::atomic<bool> stop_beats_{false};
  std::atomic<int64_t> released_soon_{0};  // release_soon's newest
  std::mutex beat_mutex_;                  // with beat_wake_: wakes the heartbeat thread early
  std::condition_variable beat_wake_;
  std::thread beats_;
};

}  // namespace colo::data
