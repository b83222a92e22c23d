#pragma once
// Which LibTorch device a run uses, and what its caching allocator saw.
// The only place outside CUDA-only code that asks LibTorch about CUDA.

#include <cstdint>
#include <optional>
#include <string>

#include <c10/core/Device.h>

namespace colo::gpu {

// Resolves a device name from a spec: "auto" (the first CUDA device when one
// is visible, else the CPU), "cpu", "cuda" or "cuda:N". Throws InputError
// naming `source` and `field` for an unknown name or a CUDA device that is
// not there.
c10::Device resolve_device(const std::string& name, const std::string& source,
                           const std::string& field);

// Number of CUDA devices LibTorch sees (0 on a CPU build).
int cuda_device_count();

// Starts a new peak-memory window on `device`; no effect on the CPU.
void reset_peak_memory(const c10::Device& device);

// Highest bytes the caching allocator held for tensors on `device` since the
// last reset_peak_memory; nullopt on the CPU.
std::optional<int64_t> peak_memory_bytes(const c10::Device& device);

// Highest bytes the caching allocator reserved from the driver (what
// nvidia-smi sees, less the CUDA context); nullopt on the CPU.
std::optional<int64_t> peak_reserved_bytes(const c10::Device& device);

// Waits for all work queued on `device`; no effect on the CPU.
void synchronize(const c10::Device& device);

// Waits for the work queued on `device`'s current stream only (work on
// other streams, e.g. communication, may still run); no effect on the CPU.
void synchronize_current_stream(const c10::Device& device);

// Makes `device` the current CUDA device of this thread; no effect on the CPU.
void make_current(const c10::Device& device);

// Device memory free right now (cudaMemGetInfo: outside every process's
// caches); nullopt on the CPU.
std::optional<int64_t> free_memory_bytes(const c10::Device& device);

// Bytes the caching allocator holds from the driver right now; nullopt on
// the CPU.
std::optional<int64_t> reserved_bytes(const c10::Device& device);

// Waits for `device`, then hands every cached block no tensor uses back to
// the driver, so the next peak window starts from what is really live.
void release_cached_memory(const c10::Device& device);

// Asks CUDA to put this process's threads to sleep while they wait for
// `device` (cudaDeviceScheduleBlockingSync) rather than spin on a core, as
// CUDA does by default when a machine has more cores than contexts: on a
// CPU-poor host a spinning trainer takes the cores its data loader needs.
// Best called before the process first uses the device. Returns whether
// the device now has that setting (false on the CPU and on CPU builds).
bool sleep_while_waiting(const c10::Device& device);

// Short description of the device for tables ("cpu", "cuda:0 NVIDIA H100").
std::string describe_device(const c10::Device& device);

}  // namespace colo::gpu
