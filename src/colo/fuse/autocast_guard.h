#pragma once
// Mixed precision for a fused array's forward pass: while a guard lives, the
// ops autocast covers (convolutions, matmuls, baddbmm) run in bfloat16 on
// the given device type; everything else stays float32.

#include <c10/core/DeviceType.h>

namespace colo::fuse {

// Enables bfloat16 autocast on `device` for its lifetime when `enabled`
// (otherwise does nothing) and restores the previous state on exit. The
// weight-cast cache is off, so a step captured in a CUDA graph re-casts the
// weights the optimiser updated instead of replaying stale copies.
class Bf16AutocastGuard {
 public:
  Bf16AutocastGuard(c10::DeviceType device, bool enabled);
  ~Bf16AutocastGuard();
  Bf16AutocastGuard(const Bf16AutocastGuard&) = delete;
  Bf16AutocastGuard& operator=(const Bf16AutocastGuard&) = delete;

  // Whether autocast is on for `device` now.
  static bool active(c10::DeviceType device);

 private:
  c10::DeviceType device_;
  bool enabled_;
  bool was_enabled_ = false;
  bool cache_was_enabled_ = true;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Half;
};

}  // namespace colo::fuse
