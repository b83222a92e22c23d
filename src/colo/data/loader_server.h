#pragma once
// A shared loader's producer: runs one image pipeline and publishes its
// batches to any number of consumer processes on the host (TensorSocket's
// design). Control goes over ZeroMQ (a ROUTER socket); samples go through a
// SharedRing. The wire protocol is in loader_protocol.h.
//
// Samples come in chunks of `chunk` from a shuffled pass over the folder
// (a new order per pass); every consumer reads the same chunk stream and
// cuts its own batch size from it. Once it has filled its ring the first
// time, the producer decodes no more than `ahead` chunks past the newest
// chunk any consumer has asked for (chunks no one reads at the end are
// decoding wasted). Whose pace it keeps is `pace` (LoaderPace). A consumer
// that joins late starts, when it first asks for data (until then, while
// its job starts, it holds nothing back), at the oldest chunk still held but
// no further back than the lag its pace allows (rejoin_at in
// loader_state.h), so the rest stays slack; one that fell behind starts
// again the same way. A consumer that holds the slot the
// producer needs next while another consumer has waited `stall_s` for new
// data is left behind; one that sends nothing for `heartbeat_timeout_s` is
// dropped. With every consumer left behind the producer stops.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "colo/data/image_pipeline.h"

namespace colo::data {

// Whose pace a shared producer keeps (DATA.toml `pace`).
//  fastest: no consumer waits for a slower one. A consumer that falls a
//    ring behind the producer loses the chunks the others have moved past
//    and starts again as a late joiner does; only chunks a consumer reads
//    in place (from the device ring) and has not released hold the
//    producer back. Decoding follows the fastest consumer.
//  slowest: TensorSocket's rubber band. Every consumer reads every chunk
//    from where it joined; the fastest waits for the slowest once it is a
//    ring ahead (until `stall_s` leaves the slowest behind).
enum class LoaderPace { fastest, slowest };

// "fastest" or "slowest", as DATA.toml writes it.
inline const char* pace_name(LoaderPace pace) { return pace == LoaderPace::slowest ? "slowest" : "fastest"; }

struct LoaderServeSpec {
  ImagePipelineSpec pipeline;
  std::string address;              // ZeroMQ endpoint, e.g. ipc:///tmp/colo-loader.sock
  int64_t chunk = 128;              // samples per published chunk
  int64_t buffer = 16;              // chunks held (ring slots)
  int64_t ahead = 8;                // after the first ring-full: chunks decoded past the newest asked for (1..buffer)
  LoaderPace pace = LoaderPace::fastest;
  double stall_s = 5;
  double heartbeat_timeout_s = 10;
  double idle_exit_s = 0;           // > 0: exit once consumers came and all left for this long
  std::string device;               // "cuda:N": also keep the ring on that GPU for its consumers (CUDA IPC)
  // Not read from DATA.toml (`colo loader serve --ready-file`): when set, the
  // producer writes this file (atomically: one JSON line with "chunks",
  // "buffer_slots" and "unix_s") once it has published its first ring-full,
  // so that a scheduler can start the jobs that read it only then.
  std::string ready_file;
  // Consumers a scheduler launched together once the ring was full (their
  // environment's COLO_LOADER_START_GROUP names this producer's ready file;
  // they send it with their first request) get their first chunks
  // together: once as many have asked as the scheduler wrote it launched
  // (colo/core/loader_start_group.h), or this long after the first asked.
  // So they train side by side from the same chunk, instead of the first
  // ones racing ahead alone (waiting for decoding) and the last ones
  // trailing, their last chunks decoded again for fewer readers. A group
  // naming another ready file is ignored.
  double start_group_wait_s = 20;
};

// A copy of the ring in device memory that consumer processes map (CUDA
// IPC), so that a batch reaches every consumer on a GPU with one
// host-to-device copy. Implemented where the GPU is known (device_ring.h).
class RingMirror {
 public:
  virtual ~RingMirror() = default;
  // The whole host ring, given once before any copy: the mirror may pin it
  // so that its copies need no CPU staging.
  virtual void attach_host_ring(uint8_t* base, int64_t bytes) = 0;
  // Starts copying `bytes` of host slot `slot` (at `data`) to the device
  // slot; the host slot must stay as it is until wait_copies returns.
  virtual void start_copy(int64_t slot, const uint8_t* data, int64_t bytes) = 0;
  // Returns once every copy started is done and visible to other processes
  // (the thread sleeps meanwhile).
  virtual void wait_copies() = 0;
  // What consumers need to map it: the welcome's "device_ring".
  virtual nlohmann::json describe() const = 0;
  // The fatal error its device reports (gpu::fatal_device_error), empty
  // while there is none.
  virtual std::string fault() const { return {}; }
};

// Reads DATA.toml: the pipeline keys plus address, chunk, buffer, ahead, pace, stall_s,
// heartbeat_timeout_s, idle_exit_s, device. Throws InputError naming the file and
// field. The default address is derived from the file's resolved path (any
// spelling of it, through links or ".", gives the same address).
LoaderServeSpec parse_loader_serve_spec(const std::string& path);

struct LoaderState;  // loader_state.h

class LoaderServer {
 public:
  // Scans the folder and binds the address; throws InputError or
  // std::runtime_error (address in use, or another producer answers there:
  // one at an ipc:// address is never taken over) before serving anything.
  // `mirror`, when given, receives every slot the producer fills (spec.device).
  explicit LoaderServer(LoaderServeSpec spec, std::unique_ptr<RingMirror> mirror = nullptr);
  ~LoaderServer();

  // Serves until stop() or the idle exit. Progress lines go to stderr every
  // `report_s` seconds (0: none).
  void serve(double report_s = 10);
  // Asks serve() to return (async-signal-safe).
  void stop() { stopping_ = true; }

  // Producer counters: chunks and samples produced, CPU core-seconds of the
  // process, buffer depth, consumers; per consumer (`consumer_stats`) its
  // samples, samples/s and time waiting for data as a percentage of its time
  // connected, as of its last heartbeat. What `stats` requests answer.
  nlohmann::json stats() const;

 private:
  LoaderServeSpec spec_;
  std::unique_ptr<LoaderState> state_;
  std::atomic<bool> stopping_{false};
  bool bound_ = false;  // it listens at spec_.address (its ipc:// file is its own to remove)
};

}  // namespace colo::data
