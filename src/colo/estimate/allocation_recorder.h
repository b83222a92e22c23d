#pragma once
// Records the tensor allocations and frees that this thread makes on the
// CPU while a recorder lives, in order: how long real model code keeps its
// tensors (C++ temporaries live to the end of their expression, named
// locals to the end of their scope), which an autograd graph cannot tell.

#include <cstdint>
#include <memory>
#include <vector>

namespace colo::estimate {

struct CpuAllocationEvent {
  bool allocate = true;  // false: the allocation `id` was freed
  int64_t id = 0;        // numbered from 0 in allocation order
  int64_t bytes = 0;     // requested bytes (0 for frees)
};

// Installs itself as LibTorch's CPU allocator on construction and puts the
// previous one back on destruction. Only the constructing thread's
// allocations are recorded, raw ones (oneDNN's buffers) included; intra-op
// worker threads' are not, and pass to the previous allocator untouched.
// One recorder
// at a time per process: throws std::runtime_error when another is alive or
// when another allocator of higher priority is installed.
class CpuAllocationRecorder {
 public:
  CpuAllocationRecorder();
  ~CpuAllocationRecorder();
  CpuAllocationRecorder(const CpuAllocationRecorder&) = delete;
  CpuAllocationRecorder& operator=(const CpuAllocationRecorder&) = delete;

  // What was recorded so far; frees of allocations made before the recorder
  // started are not included.
  std::vector<CpuAllocationEvent> events() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace colo::estimate
