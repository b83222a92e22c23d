#pragma once
// What a shared loader's producer (LoaderServer) shares between its threads:
// the control loop (loader_server.cpp), the assembler that has chunks
// decoded and the mirror that copies them to a GPU (loader_assembler.cpp).
// Internal to the producer.

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <sys/eventfd.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "colo/core/stopwatch.h"
#include "colo/data/image_pipeline.h"
#include "colo/data/loader_protocol.h"
#include "colo/data/loader_server.h"
#include "colo/data/shared_ring.h"

namespace colo::data {

// A consumer as the producer sees it.
struct Consumer {
  std::string route;          // ZeroMQ routing id
  int64_t cursor = 0;         // next chunk it wants
  int64_t keep = 0;           // oldest chunk it still uses; done with all before
  bool pending = false;       // a "next" is waiting for data
  int64_t skipped = 0;        // chunks it lost by falling behind
  int64_t joined_at = 0;      // the oldest chunk held when it connected: none before it was its to lose
  bool behind = false;        // not asked yet, or left behind since it last asked: holds nothing back
  int64_t requested = 0;      // the chunk its pending "next" asked for
  int64_t served = 0;         // every chunk it was given is before this one
  bool in_place = false;      // it reads the ring in place (its requests say which chunks it keeps)
  bool in_start_group = false;  // its first chunk waits for its start group (LoaderServeSpec)
  std::string start_group_member;  // what it counts as in StartGroup::asked ("job N" or "consumer N")
  // Chunks [hole_from, hole_to) it was moved past, unread, because their
  // slots were about to be overwritten (pace fastest, reading in place):
  // not its to hold, though it still holds chunks before and after them.
  int64_t hole_from = 0, hole_to = 0;
  int64_t span = 1;           // the most chunks one of its batches spans
  Stopwatch last_seen;        // since it last sent anything
  nlohmann::json reported;    // its last beat's figures (samples, wait_s, elapsed_s), if any

  // Whether it was moved past chunk `seq` without reading it.
  bool moved_past(int64_t seq) const { return seq >= hole_from && seq < hole_to; }
};

// A chunk consumers may read: its ring slot, samples and pass over the folder.
struct Published {
  int64_t slot = 0;
  int64_t count = 0;
  int64_t epoch = 0;
};

// A chunk handed to the decoder: its number, the decoder's ticket, samples, pass.
struct Decoding {
  int64_t seq, ticket, count, epoch;
};

// The consumers launched together whose first chunks wait for each other
// (LoaderServeSpec::start_group_wait_s): one group per producer.
struct StartGroup {
  size_t size = 0;              // jobs in it, once the scheduler has written how many; 0 until then
  std::set<std::string> members;  // the job ids the scheduler wrote with its size; empty when none
  std::set<std::string> asked;  // the jobs (or consumers, without a job id) that asked for their first chunk
  Stopwatch since_first_asked;
  Stopwatch since_size_read;    // its size file is read at most every 0.1 s while it waits
  bool released = false;        // its consumers are served as any others
};

// Everything the producer's threads share; `mutex` guards what they change.
struct LoaderState {
  explicit LoaderState(const LoaderServeSpec& spec)
      : decoder(scan_image_folder(spec.pipeline.root), spec.pipeline),
        ring(SharedRing::create(spec.buffer, loader_slot_bytes(spec.chunk, sample_bytes(spec.pipeline)))),
        router(context, zmq::socket_type::router) {}

  ImageDecoder decoder;
  SharedRing ring;
  std::unique_ptr<RingMirror> mirror;
  zmq::context_t context;
  zmq::socket_t router;

  mutable std::mutex mutex;
  std::condition_variable changed;
  std::map<int64_t, Published> chunks;  // seq -> where it is; oldest first
  int64_t next_seq = 0;                 // the chunk published next (later ones may be decoding or copying)
  int64_t oldest = 0;                   // oldest chunk still in the ring
  int64_t newest_asked = 0;             // the newest chunk any consumer has asked for
  std::map<int64_t, Consumer> consumers;
  StartGroup start_group;
  std::deque<nlohmann::json> departed;  // the last reports of consumers that said bye (newest last, kDepartedKept)
  int64_t next_consumer = 1;
  int64_t consumers_seen = 0;
  int64_t dropped = 0;
  int64_t left_behind = 0;
  // Where the producer's time goes: the assembler waiting for the slowest
  // consumer to free a slot, for a consumer to ask for more (`ahead`
  // chunks decoded past the newest asked for), or for the decoders; the
  // mirror's rounds of copies and its time waiting for them.
  double waited_for_slots_s = 0, waited_for_demand_s = 0, waited_for_decoding_s = 0, waited_for_copies_s = 0;
  int64_t mirror_rounds = 0;
  int64_t samples = 0;
  bool stopping = false;
  std::string failure;  // the assembler's (or mirror's) error, ends serve()
  Stopwatch started;
  Stopwatch idle_since;
  // A scheduler about to launch jobs that will read here ("hold") keeps it
  // counted as read until `started` reaches this (seconds).
  double held_until_s = 0;
  double held_for_s() const { return std::max(0.0, held_until_s - started.elapsed_s()); }
  std::thread assembler;
  // With a mirror: decoded chunks waiting for their device copy, and the
  // thread that copies and then publishes them.
  std::deque<Decoding> to_mirror;
  std::condition_variable mirror_wake;
  std::thread mirror_thread;
  // Written when a chunk is published: wakes serve()'s poll to answer the
  // consumers waiting for it at once.
  int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

  ~LoaderState() {
    if (wake_fd >= 0) close(wake_fd);
  }

  // Makes decoded (and mirrored) chunk f available to consumers; chunks
  // come in order. Called with `mutex` held.
  void publish(const Decoding& f, int64_t slots) {
    chunks[f.seq] = Published{f.seq % slots, f.count, f.epoch};
    next_seq = f.seq + 1;
    samples += f.count;
    const uint64_t one = 1;
    if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0) {
      // Already signalled (the counter is full): serve() wakes anyway.
    }
    changed.notify_all();
  }
};

// The widest span (chunks one batch may touch) among the consumers not left
// behind and `span`, a consumer's about to start. Called with s.mutex held.
inline int64_t widest_span(const LoaderState& s, int64_t span) {
  for (const auto& [id, c] : s.consumers) {
    if (!c.behind) span = std::max(span, c.span);
  }
  return span;
}

// Chunks short of the producer's decode window that already count as in it
// for a consumer reading in place whose batches span `span` chunks: while
// it reads a batch (held until its copies are done) the faster consumers
// move on, and the chunks it holds must not be wanted meanwhile. At most
// half of what `ahead` leaves of the ring (the slack), and never so much
// that a consumer at the others' pace is moved on: one that has read a
// batch fewer than another lags the newest chunk asked for by up to the
// widest batch's span (`widest`), so the margin leaves more than that of
// the slack.
inline int64_t overwrite_margin(const LoaderServeSpec& spec, int64_t span, int64_t widest) {
  const int64_t slack = spec.buffer - spec.ahead;
  return std::max<int64_t>(0, std::min({span, slack / 2, slack - widest - 1}));
}

// Where a consumer that joins late, or fell behind, starts: the oldest
// chunk held, but no further back behind the newest chunk asked for than
// its pace allows. With pace slowest, half the ring: it holds the others
// back, so the other half stays slack for hiccups. With pace fastest it
// holds no one back, and every chunk it skips is one more decoded for it
// at the end, so it starts near the oldest chunk the producer keeps once it
// runs `ahead` of the newest asked for: an eighth of the slack after it, or
// just clear of the margin in which a consumer reading in place is moved
// on (for the widest span among the consumers and `span`, the joiner's)
// when that is more, so that consumers that read in place and consumers
// that copy start at the same chunk. Called with s.mutex held.
inline int64_t rejoin_at(const LoaderState& s, const LoaderServeSpec& spec, int64_t span) {
  const int64_t slack = spec.buffer - spec.ahead;
  const int64_t widest = widest_span(s, span);
  const int64_t clear = std::max(slack / 8, overwrite_margin(spec, widest, widest));
  const int64_t lag = spec.pace == LoaderPace::slowest ? spec.buffer / 2 : std::max<int64_t>(0, slack - 1 - clear);
  return std::max(s.oldest, s.newest_asked - lag);
}

// The assembler thread's work: has the decoder fill ring slots chunk after
// chunk (a shuffled pass over the folder at a time, several chunks at
// once), each once its slot is free, and publishes them (through the
// mirror, when there is one). Returns when s.stopping is set, or records
// its error in s.failure.
void assemble_chunks(LoaderState& s, const LoaderServeSpec& spec);

// The mirror thread's work (s.mirror set): copies every chunk decoded since
// its last round to the device in one go, then publishes them, so the
// decoders never wait for the GPU and the copies of several chunks share
// one of the producer's time slices. Returns when s.stopping is set, or
// records its error in s.failure.
void mirror_chunks(LoaderState& s, const LoaderServeSpec& spec);

}  // namespace colo::data
