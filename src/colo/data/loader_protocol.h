#pragma once
// The shared loader's control messages: one JSON object per ZeroMQ frame,
// consumer (DEALER) to producer (ROUTER) and back.
//
//   {"op":"hello"}                      -> {"op":"welcome","consumer":id,"ring":path,"slots":S,
//                                           "slot_bytes":b,"chunk":c,"shape":[3,H,W],"mean":[..],
//                                           "std":[..],"classes":k,"epoch_samples":n,
//                                           "device_ring":{"handle":hex,"device":"cuda:0","bytes":b}}
//                                           (device_ring only when the producer mirrors its ring on a GPU)
//   {"op":"next","consumer":id,"seq":k,"keep":j,"span":m,"start_group":READY_FILE,"job":JOB_ID}
//                                       -> {"op":"chunk","seq":k2,"slot":s,"count":n,"epoch":e,
//                                           "skipped":k2-k}   (k2 > k when k was dropped, or,
//                                           read in place with pace fastest, its slot is wanted soon)
//                                          (start_group, on a consumer's first "next" only: see
//                                           LoaderServeSpec::start_group_wait_s)
//   {"op":"release","consumer":id,"keep":j}
//                                       -> (no reply)
//   {"op":"beat","consumer":id,"samples":n,"wait_s":w,"elapsed_s":t}
//                                       -> {"op":"alive"}   (the figures so far, optional)
//   {"op":"stats"}                      -> the producer's counters
//   {"op":"hold","seconds":s}           -> {"op":"held","held_s":h}   (a scheduler about to launch
//                                           jobs that will read here: counted as read for s more
//                                           seconds, at most 600; `stats` says "held_s")
//   {"op":"bye","consumer":id,"samples":n,"wait_s":w,"elapsed_s":t}
//                                       -> (no reply; its last figures stay in `stats`)
//   anything from an unknown consumer   -> {"op":"error","message":...}
//   a field of the wrong type (consumer, seq, keep, span: integers; samples,
//   wait_s, elapsed_s, seconds: numbers; op: a string) -> {"op":"error","message":...};
//                                          the producer goes on
//
// A consumer still uses chunk `keep` and every later one it was given, and
// is done with every chunk before; without `keep`, asking for chunk k says
// it is done with every chunk before k, and that it copies chunks out
// (checking the slot's header before and after) rather than reading them in
// place. (Consumers that read the device ring keep chunks whose copies
// their GPU has not yet made, and send "release" from their heartbeat
// socket once it has: any of a consumer's sockets may send it.) A slot holds an
// int64 header (the chunk's seq once it is complete), the chunk's int64
// labels, then its uint8 samples (C x H x W each); the device ring's slots
// are laid out the same. One of a consumer's batches spans at most `span`
// chunks (1 when not sent).

#include <cstdint>

namespace colo::data {

// Bytes of one ring slot for `chunk` samples of `sample_bytes` each,
// rounded up to 256 so that every slot's labels are aligned for the device
// copies that read them in place.
inline int64_t loader_slot_bytes(int64_t chunk, int64_t sample_bytes) {
  const int64_t bytes = static_cast<int64_t>(sizeof(int64_t)) * (1 + chunk) + chunk * sample_bytes;
  return (bytes + 255) / 256 * 256;
}

// Where a slot's samples start.
inline int64_t loader_slot_pixels_offset(int64_t chunk) {
  return static_cast<int64_t>(sizeof(int64_t)) * (1 + chunk);
}

}  // namespace colo::data
