#include "colo/estimate/device_profile.h"

namespace colo::estimate {

// Measured on one H100 80GB HBM3 (driver 580, PyTorch 2.11, CUDA 13) by
// bench/estimate/ (see bench/results/estimate/README.md): the context of a
// fresh process (742-758 MiB by model family; the larger is kept), the
// workspace the smallest jobs reserve beyond the replay, and the median ratio
// of measured to replayed reservation per model and peak phase, all fitted on
// the training rows only. The cuDNN workspaces per convolution shape are
// measured by bench/estimate/measure_conv_workspace (profiles/). Those of
// bf16 (used for fp16 too) were measured on an H200 (extend_profile.py --half), no
// H100 being lent then: the same GH100 chip, whose float32 workspaces agreed
// with the H100's to a median ratio of 1.000 over 9,741 points.
DeviceProfile default_device_profile() {
  constexpr int64_t kMiB = 1 << 20;
  DeviceProfile p;
  p.name = "NVIDIA H100 80GB HBM3, PyTorch 2.11, CUDA 13";
  p.context_bytes = 758 * kMiB;
  p.library_workspace_bytes = 69206016;
  p.cublas_workspace_bytes = 32 * kMiB;  // seen in the H100 allocator traces (fresh_probe.sh) and measured on an H200
  p.fragmentation = {
        {"lenet/backward", 1.0000},
        {"lenet/evaluation", 1.0000},
        {"mlp/backward", 0.9302},
        {"mlp/evaluation", 0.9773},
        {"mlp/forward", 0.9540},
        {"mlp/optimizer", 0.9822},
        {"resnet/backward", 0.9993},
        {"resnet/evaluation", 0.9155},
        {"resnet/forward", 0.9828},
        {"transformer/backward", 1.0453},
        {"transformer/evaluation", 1.0159},
        {"transformer/forward", 1.0684}};
  static const ConvWorkspaceTable kConvWorkspace = ConvWorkspaceTable::from_json(
#include "conv_workspace_json.inc"
  );
  p.conv_workspace = kConvWorkspace;
  static const ConvWorkspaceTable kConvWorkspaceHalf = ConvWorkspaceTable::from_json(
#include "conv_workspace_half_json.inc"
  );
  p.conv_workspace_half = kConvWorkspaceHalf;
  return p;
}

}  // namespace colo::estimate
