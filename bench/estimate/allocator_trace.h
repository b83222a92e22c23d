#pragma once
// Records the CUDA caching allocator's own event trace (every allocation,
// free and segment the driver gave it) so that bench/estimate/ can compare
// colo's allocator model and step replay with what PyTorch really did.

#include <string>

namespace colo::bench {

// Starts recording (and clears what was recorded before). Throws on a build
// without CUDA.
void start_allocator_trace();

// Writes the events recorded since start_allocator_trace() to `path` as CSV
// (action,addr,size,stream; actions as PyTorch names them: alloc,
// free_requested, free_completed, segment_alloc, segment_free, ...) and stops
// recording. Returns the number of events written.
long write_allocator_trace(const std::string& path);

}  // namespace colo::bench
