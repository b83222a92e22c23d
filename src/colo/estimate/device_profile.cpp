#include "colo/estimate/device_profile.h"

namespace colo::estimate {

// Measured on one H100 80GB HBM3 (driver 580, PyTorch 2.11, CUDA 13) by
// bench/estimate/ (see bench/results/estimate/README.md): the context of a
// fresh process (742-758 MiB by model family; the larger is kept), the
// workspace the smallest jobs reserve beyond the replay, and the median ratio
// of measured to replayed reservation per model and peak phase, all fitted on
// the training rows only. The cuDNN workspaces per convolution shape are
// measured by bench/estimate/measure_conv_workspace (profiles/).
DeviceProfile default_device_profile() {
  constexpr int64_t kMiB = 1 << 20;
  DeviceProfile p;
  p.name = "NVIDIA H100 80GB HBM3, PyTorch 2.11, CUDA 13";
  p.context_bytes = 758 * kMiB;
  p.library_workspace_bytes = 69206016;
  p.fragmentation = {
        {"lenet/backward", 1.0000},
        {"lenet/evaluation", 1.0000},
        {"mlp/backward", 0.9302},
        {"mlp/evaluation", 0.9784},
        {"mlp/forward", 0.9587},
        {"mlp/optimizer", 0.9805},
        {"resnet/backward", 1.2320},
        {"resnet/evaluation", 1.2129},
        {"resnet/forward", 1.2242},
        {"transformer/backward", 0.9679},
        {"transformer/evaluation", 0.9122},
        {"transformer/forward", 0.9704}};
  static const ConvWorkspaceTable kConvWorkspace = ConvWorkspaceTable::from_json(
#include "conv_workspace_json.inc"
  );
  p.conv_workspace = kConvWorkspace;
  return p;
}

}  // namespace colo::estimate
