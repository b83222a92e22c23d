#include "colo/estimate/device_profile.h"

namespace colo::estimate {

DeviceProfile default_device_profile() {
  constexpr int64_t kMiB = 1 << 20;
  return DeviceProfile{"NVIDIA H100 80GB HBM3, PyTorch 2.11, CUDA 13 (provisional)", 512 * kMiB,
                       32 * kMiB};
}

}  // namespace colo::estimate
