#include "colo/estimate/allocation_recorder.h"

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

// LibTorch 2.3 made Allocator::allocate non-const and added copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define COLO_ALLOCATE_CONST
#define COLO_HAS_COPY_DATA 1
#else
#define COLO_ALLOCATE_CONST const
#define COLO_HAS_COPY_DATA 0
#endif

namespace colo::estimate {

struct CpuAllocationRecorder::State {
  std::mutex mutex;
  std::thread::id thread = std::this_thread::get_id();
  bool active = true;
  int64_t next_id = 0;
  std::vector<CpuAllocationEvent> events;
};

namespace {

// A recorded allocation: the real one, and whom to tell of its free.
struct RecordedBlock {
  c10::DataPtr inner;
  std::shared_ptr<CpuAllocationRecorder::State> state;
  int64_t id;
};

// Recorded blocks by their data pointer. A recorded DataPtr's context is its
// data, as raw_allocate (oneDNN's buffers) requires, so its free is found here.
struct RecordedBlocks {
  std::mutex mutex;
  std::unordered_map<void*, RecordedBlock> by_data;
  c10::DeleterFnPtr base_raw_deleter = nullptr;  // for pointers not recorded
};

RecordedBlocks& recorded_blocks() {
  static auto* blocks = new RecordedBlocks();  // never destroyed: storages may outlive any recorder
  return *blocks;
}

// The deleter of recorded DataPtrs and the raw deleter while recording:
// records the free of a recorded block, else hands the pointer to the
// allocator that made it.
void delete_recorded(void* data) {
  RecordedBlocks& blocks = recorded_blocks();
  std::unique_lock<std::mutex> lock(blocks.mutex);
  auto it = blocks.by_data.find(data);
  if (it == blocks.by_data.end()) {
    c10::DeleterFnPtr base = blocks.base_raw_deleter;
    lock.unlock();
    if (base) base(data);
    return;
  }
  RecordedBlock block = std::move(it->second);
  blocks.by_data.erase(it);
  lock.unlock();
  {
    std::lock_guard<std::mutex> state_lock(block.state->mutex);
    if (block.state->active) block.state->events.push_back({false, block.id, 0});
  }
}  // block.inner frees the memory here

// One per process and never destroyed: storages made while recording keep
// a pointer to the allocator that made them. Forwards to the allocator it
// replaced when no recorder is alive.
struct RecordingAllocator : c10::Allocator {
  c10::DataPtr allocate(size_t n) COLO_ALLOCATE_CONST override {
    c10::DataPtr inner = base->allocate(n);
    std::shared_ptr<CpuAllocationRecorder::State> current;
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = state;
    }
    if (!current || n == 0 || std::this_thread::get_id() != current->thread) return inner;
    int64_t id;
    {
      std::lock_guard<std::mutex> lock(current->mutex);
      if (!current->active) return inner;
      id = current->next_id++;
      current->events.push_back({true, id, static_cast<int64_t>(n)});
    }
    void* data = inner.get();
    c10::Device device = inner.device();
    {
      RecordedBlocks& blocks = recorded_blocks();
      std::lock_guard<std::mutex> lock(blocks.mutex);
      blocks.by_data.emplace(data, RecordedBlock{std::move(inner), current, id});
    }
    return c10::DataPtr(data, data, &delete_recorded, device);
  }

  // raw_allocate/raw_deallocate (oneDNN's buffers): recorded in the
  // recording thread like any allocation; other threads' pair through the
  // base allocator, via delete_recorded, whether this one is installed or not.
  c10::DeleterFnPtr raw_deleter() const override { return &delete_recorded; }

#if COLO_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, size_t count) const override { std::memcpy(dest, src, count); }
#endif

  c10::Allocator* base = nullptr;
  mutable std::mutex mutex;
  std::shared_ptr<CpuAllocationRecorder::State> state;
};

RecordingAllocator& recording_allocator() {
  static auto* allocator = new RecordingAllocator();
  return *allocator;
}

}  // namespace

CpuAllocationRecorder::CpuAllocationRecorder() : state_(std::make_shared<State>()) {
  RecordingAllocator& recording = recording_allocator();
  {
    std::lock_guard<std::mutex> lock(recording.mutex);
    if (recording.state) throw std::runtime_error("cannot record CPU allocations: another recorder is alive");
    c10::Allocator* current = c10::GetCPUAllocator();
    if (current != &recording) {
      recording.base = current;
      std::lock_guard<std::mutex> blocks_lock(recorded_blocks().mutex);
      recorded_blocks().base_raw_deleter = current->raw_deleter();
    }
    recording.state = state_;
  }
  c10::SetCPUAllocator(&recording);
  if (c10::GetCPUAllocator() != &recording) {
    std::lock_guard<std::mutex> lock(recording.mutex);
    recording.state.reset();
    throw std::runtime_error("cannot record CPU allocations: another CPU allocator has priority");
  }
}

CpuAllocationRecorder::~CpuAllocationRecorder() {
  RecordingAllocator& recording = recording_allocator();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->active = false;
  }
  c10::SetCPUAllocator(recording.base);
  std::lock_guard<std::mutex> lock(recording.mutex);
  recording.state.reset();
}

std::vector<CpuAllocationEvent> CpuAllocationRecorder::events() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->events;
}

}  // namespace colo::estimate
