#include "allocator_trace.h"

#include <cstdint>
#include <fstream>
#include <stdexcept>

#if COLO_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/cuda/memory_snapshot.h>
#endif

namespace colo::bench {

#if COLO_HAS_CUDA
namespace {

using Action = c10::cuda::CUDACachingAllocator::TraceEntry::Action;

const char* action_name(Action action) {
  switch (action) {
    case Action::ALLOC: return "alloc";
    case Action::FREE_REQUESTED: return "free_requested";
    case Action::FREE_COMPLETED: return "free_completed";
    case Action::SEGMENT_ALLOC: return "segment_alloc";
    case Action::SEGMENT_FREE: return "segment_free";
    case Action::OOM: return "oom";
    default: return "other";
  }
}

}  // namespace

void start_allocator_trace() {
  torch::cuda::_record_memory_history(false);
  // No stack contexts, room for a long job's events.
  torch::cuda::_record_memory_history(true, false, 4'000'000, false, false);
}

long write_allocator_trace(const std::string& path) {
  auto snapshot = c10::cuda::CUDACachingAllocator::snapshot();
  torch::cuda::_record_memory_history(false);
  std::ofstream out(path);
  if (!out) throw std::runtime_error("allocator trace: cannot write " + path);
  out << "action,addr,size,stream\n";
  long written = 0;
  for (const auto& device : snapshot.device_traces) {
    for (const auto& entry : device) {
      out << action_name(entry.action_) << "," << entry.addr_ << "," << entry.size_ << ","
          << reinterpret_cast<uintptr_t>(entry.stream_) << "\n";
      ++written;
    }
  }
  return written;
}

#else

void start_allocator_trace() {
  throw std::runtime_error("allocator trace: this build has no CUDA (COLO_HAS_CUDA=0)");
}

long write_allocator_trace(const std::string&) {
  throw std::runtime_error("allocator trace: this build has no CUDA (COLO_HAS_CUDA=0)");
}

#endif

}  // namespace colo::bench
