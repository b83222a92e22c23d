#include "colo/data/loader_state.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace colo::data {
namespace {

// At most this many chunks are decoded at once (fewer with a ring of few slots).
constexpr int64_t kChunksInFlight = 3;

// How often an idle mirror asks its GPU for a fatal error.
constexpr std::chrono::milliseconds kFaultCheckEvery{500};

}  // namespace

// A fatal fault on the GPU (under MPS, any client's: a job's illegal memory
// access reaches every process there) ends the producer even while it
// copies nothing: MPS takes no new process on that GPU until every one that
// saw the fault has exited, and an idle producer would otherwise hold it so.
void mirror_chunks(LoaderState& s, const LoaderServeSpec& spec) {
  const int64_t slots = spec.buffer, chunk = spec.chunk;
  const int64_t pixels_at = loader_slot_pixels_offset(chunk), per_sample = sample_bytes(spec.pipeline);
  try {
    for (;;) {
      std::vector<Decoding> round;
      {
        std::unique_lock<std::mutex> lock(s.mutex);
        while (!s.mirror_wake.wait_for(lock, kFaultCheckEvery, [&] { return s.stopping || !s.to_mirror.empty(); })) {
          lock.unlock();
          const std::string fault = s.mirror->fault();
          lock.lock();
          if (!fault.empty()) {
            s.failure = "its GPU reported a fatal error (" + fault +
                        "), from this producer's work or, under MPS, any process's on that GPU; stopping, so that "
                        "the GPU takes new processes again";
            return;
          }
        }
        if (s.stopping) return;
        round.assign(s.to_mirror.begin(), s.to_mirror.end());
        s.to_mirror.clear();
      }
      for (const Decoding& f : round) {
        s.mirror->start_copy(f.seq % slots, s.ring.slot(f.seq % slots), pixels_at + f.count * per_sample);
      }
      Stopwatch copying;
      s.mirror->wait_copies();
      std::lock_guard<std::mutex> lock(s.mutex);
      s.waited_for_copies_s += copying.elapsed_s();
      ++s.mirror_rounds;
      for (const Decoding& f : round) s.publish(f, slots);
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.failure = std::string("copying to the device: ") + e.what();
  }
}

void assemble_chunks(LoaderState& s, const LoaderServeSpec& spec) {
  // Whether consumer c keeps chunk `reused` from being overwritten. With
  // pace slowest, until it is done with it. With pace fastest, only while
  // it reads it in place (copies out are checked, and asked for again when
  // overwritten); a chunk it has not been given yet, or was moved past
  // unread (Consumer::moved_past), is lost to it. (With
  // `ahead` at most half the ring, the newest consumer has moved past any
  // chunk whose slot is wanted.) Called with s.mutex held.
  auto holds_back = [&](const Consumer& c, int64_t reused) {
    if (c.keep > reused || c.moved_past(reused)) return false;
    return spec.pace == LoaderPace::slowest || (c.in_place && reused < c.served);
  };
  const int64_t slots = spec.buffer, chunk = spec.chunk;
  const int64_t ahead = spec.ahead;  // within the ring (LoaderServer's constructor)
  const int64_t images = s.decoder.folder().size();
  std::vector<int64_t> order;  // this epoch's (image_pass_order)
  int64_t epoch = -1, offset = images;
  std::vector<int64_t> indices;
  const int64_t pixels_at = loader_slot_pixels_offset(chunk);
  // Chunks being decoded at once: the decode threads go on to the next
  // chunk while this thread publishes (and copies to the device) the last.
  const int64_t depth = std::clamp<int64_t>(slots - 1, 1, kChunksInFlight);
  std::deque<Decoding> in_flight;
  int64_t next_chunk = 0;

  // Chunk k may take its slot once no consumer needs the chunk there (see
  // holds_back), and someone still reads: with every consumer left behind
  // (or none yet) the producer would only decode chunks no one sees.
  // Called with s.mutex held.
  auto slot_free = [&](int64_t k) {
    if (k < slots) return true;
    const int64_t reused = k - slots;
    if (reused >= s.next_seq) return false;  // the chunk there is still being copied to the device
    bool reading = false;
    for (const auto& [id, c] : s.consumers) {
      if (c.behind) continue;
      if (holds_back(c, reused)) return false;
      reading = true;
    }
    return reading;
  };
  // A consumer that asked for a chunk not made yet: only such a one is
  // held up by a consumer that stalls. Called with s.mutex held.
  auto someone_waits = [&] {
    for (const auto& [id, c] : s.consumers) {
      if (!c.behind && c.pending && c.cursor >= s.next_seq) return true;
    }
    return false;
  };
  // Chunk k is decoded once it is wanted: the first ring-full at once
  // (ready for the first consumers while their jobs start), later ones at
  // most `ahead` past the newest chunk asked for, so that a long ring
  // costs no decoding of chunks no one will read. Called with s.mutex held.
  auto wanted = [&](int64_t k) { return k < slots || k <= s.newest_asked + ahead; };
  // Waits until chunk k is wanted and its slot is free, leaving behind
  // consumers that hold the slot up while another has waited stall_s for
  // new data; false when the server stops.
  auto take_slot = [&](int64_t k) {
    std::unique_lock<std::mutex> lock(s.mutex);
    Stopwatch waiting;
    for (;;) {
      if (s.stopping) return false;
      const bool asked = wanted(k);
      if (asked && slot_free(k)) break;
      const int64_t reused = k - slots;  // the chunk whose slot k takes
      if (!someone_waits()) waiting.restart();
      bool left_one_behind = false;
      if (asked && waiting.elapsed_s() > spec.stall_s) {
        for (auto& [id, c] : s.consumers) {
          // Pending, it holds nothing older than it asked for, unless
          // it reads in place and has not released what it read.
          if (holds_back(c, reused) && (!c.pending || c.keep < c.requested)) {
            if (!c.behind) {
              std::fprintf(stderr, "colo loader: consumer %lld has held up the others for %.1f s; leaving it behind\n",
                           static_cast<long long>(id), spec.stall_s);
              ++s.left_behind;
            }
            c.behind = true;
            c.cursor = std::max(c.cursor, reused + 1);
            c.keep = reused + 1;
            left_one_behind = true;
          }
        }
        // Its slot may be free now; with no one to leave behind, wait (and
        // let the control loop have the lock) as below.
        if (left_one_behind) continue;
      }
      Stopwatch blocked;
      s.changed.wait_for(lock, std::chrono::milliseconds(50));
      (asked ? s.waited_for_slots_s : s.waited_for_demand_s) += blocked.elapsed_s();
    }
    if (k >= slots) {
      s.chunks.erase(k - slots);
      s.oldest = k - slots + 1;
    }
    return true;
  };
  auto submit = [&](int64_t k) {
    if (offset >= images) {
      ++epoch;
      offset = 0;
      order = image_pass_order(images, spec.pipeline.seed, epoch);
    }
    const int64_t n = std::min(chunk, images - offset);
    indices.assign(order.begin() + offset, order.begin() + offset + n);
    offset += n;
    uint8_t* slot = s.ring.slot(k % slots);
    *reinterpret_cast<volatile int64_t*>(slot) = -1;
    std::atomic_thread_fence(std::memory_order_release);
    auto* labels = reinterpret_cast<int64_t*>(slot + sizeof(int64_t));
    const int64_t ticket = s.decoder.submit(indices.data(), n, static_cast<uint64_t>(epoch), slot + pixels_at, labels);
    in_flight.push_back(Decoding{k, ticket, n, epoch});
  };
  // The oldest chunk decoding, once decoded: published, or with a
  // mirror handed to the mirror thread, which publishes it once copied.
  auto publish_oldest = [&] {
    const Decoding f = in_flight.front();
    in_flight.pop_front();
    Stopwatch decoding;
    s.decoder.wait(f.ticket);
    uint8_t* slot = s.ring.slot(f.seq % slots);
    std::atomic_thread_fence(std::memory_order_release);
    *reinterpret_cast<volatile int64_t*>(slot) = f.seq;
    std::lock_guard<std::mutex> lock(s.mutex);
    s.waited_for_decoding_s += decoding.elapsed_s();
    if (s.mirror) {
      s.to_mirror.push_back(f);
      s.mirror_wake.notify_one();
    } else {
      s.publish(f, slots);
    }
  };
  try {
    for (;;) {
      bool free_now;
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.stopping) break;
        free_now = wanted(next_chunk) && slot_free(next_chunk);
      }
      // Publish what is decoded rather than wait for a slot, for demand
      // or for room in flight with decoded chunks held back from the
      // consumers.
      if (!in_flight.empty() && (!free_now || static_cast<int64_t>(in_flight.size()) >= depth)) {
        publish_oldest();
        continue;
      }
      if (!take_slot(next_chunk)) break;
      submit(next_chunk++);
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.failure = e.what();
  }
  // The decode threads write into ring slots: let them finish first.
  for (const Decoding& f : in_flight) {
    try {
      s.decoder.wait(f.ticket);
    } catch (const std::exception&) {
    }
  }
}

}  // namespace colo::data
