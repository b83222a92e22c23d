#pragma once
// The shared loader's control messages: one JSON object per ZeroMQ frame,
// consumer (DEALER) to producer (ROUTER) and back.
//
//   {"op":"hello"}                      -> {"op":"welcome","consumer":id,"ring":path,"slots":S,
//                                           "slot_bytes":b,"chunk":c,"shape":[3,H,W],"mean":[..],
//                                           "std":[..],"classes":k,"epoch_samples":n}
//   {"op":"next","consumer":id,"seq":k} -> {"op":"chunk","seq":k2,"slot":s,"count":n,"epoch":e,
//                                           "skipped":k2-k}   (k2 > k when k was dropped)
//   {"op":"beat","consumer":id,"samples":n,"wait_s":w,"elapsed_s":t}
//                                       -> {"op":"alive"}   (the figures so far, optional)
//   {"op":"stats"}                      -> the producer's counters
//   {"op":"bye","consumer":id,"samples":n,"wait_s":w,"elapsed_s":t}
//                                       -> (no reply; its last figures stay in `stats`)
//   anything from an unknown consumer   -> {"op":"error","message":...}
//
// Asking for chunk k tells the producer that the consumer is done with every
// chunk before k. A slot holds the chunk's int64 labels, then its uint8
// samples (C x H x W each).

#include <cstdint>

namespace colo::data {

// Bytes of one ring slot for `chunk` samples of `sample_bytes` each.
inline int64_t loader_slot_bytes(int64_t chunk, int64_t sample_bytes) {
  return chunk * static_cast<int64_t>(sizeof(int64_t)) + chunk * sample_bytes;
}

}  // namespace colo::data
