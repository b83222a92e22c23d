#pragma once
// Which of the machine's GPUs colo may use: the ones CUDA_VISIBLE_DEVICES
// names, as CUDA reads it, so that colo run inside a Slurm allocation or
// beside other work on a shared node keeps to the GPUs it was given.

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "colo/gpu/device.h"

namespace colo::gpu {

// CUDA_VISIBLE_DEVICES names a GPU this machine does not have, names one
// twice, or names a MIG instance (colo schedules whole GPUs). what() says
// which entry and lists the GPUs there are.
class VisibleDevicesError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Positions in `devices`, in the order `visible` lists them, of the GPUs it
// names. `visible` is CUDA_VISIBLE_DEVICES's value: nullopt (unset) gives
// every device; "" gives none; otherwise comma-separated entries, each a
// device index (NVML's, which is CUDA's own order under
// CUDA_DEVICE_ORDER=PCI_BUS_ID and on hosts of one GPU model) or a UUID
// ("GPU-...", a unique prefix is enough, as for CUDA). Spaces around an
// entry are ignored. Throws VisibleDevicesError as above.
std::vector<size_t> visible_positions(const std::vector<DeviceInfo>& devices, const std::optional<std::string>& visible);

}  // namespace colo::gpu
