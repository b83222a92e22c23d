#include "colo/fuse/autocast_guard.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace colo::fuse {
namespace {

// LibTorch 2.4 replaced the per-device functions (set_enabled for CUDA,
// set_cpu_enabled, ...) by ones that take the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool enabled_on(c10::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
void enable_on(c10::DeviceType d, bool on) { at::autocast::set_autocast_enabled(d, on); }
c10::ScalarType dtype_on(c10::DeviceType d) { return at::autocast::get_autocast_dtype(d); }
void set_dtype_on(c10::DeviceType d, c10::ScalarType t) { at::autocast::set_autocast_dtype(d, t); }
#else
bool enabled_on(c10::DeviceType d) {
  return d == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void enable_on(c10::DeviceType d, bool on) {
  if (d == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}
c10::ScalarType dtype_on(c10::DeviceType d) {
  return d == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_dtype_on(c10::DeviceType d, c10::ScalarType t) {
  if (d == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(t);
  } else {
    at::autocast::set_autocast_cpu_dtype(t);
  }
}
#endif

}  // namespace

Bf16AutocastGuard::Bf16AutocastGuard(c10::DeviceType device, bool enabled) : device_(device), enabled_(enabled) {
  if (!enabled_) return;
  was_enabled_ = enabled_on(device_);
  previous_dtype_ = dtype_on(device_);
  cache_was_enabled_ = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  set_dtype_on(device_, c10::ScalarType::BFloat16);
  enable_on(device_, true);
}

Bf16AutocastGuard::~Bf16AutocastGuard() {
  if (!enabled_) return;
  enable_on(device_, was_enabled_);
  set_dtype_on(device_, previous_dtype_);
  at::autocast::set_autocast_cache_enabled(cache_was_enabled_);
}

bool Bf16AutocastGuard::active(c10::DeviceType device) { return enabled_on(device); }

}  // namespace colo::fuse
