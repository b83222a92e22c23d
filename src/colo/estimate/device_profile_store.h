#pragma once
// GPU profiles stored on this machine: what `colo gpus --profile` measured of
// a GPU (its context, library workspaces and cuDNN workspaces), kept as JSON
// under one short name per GPU model ("h100", "h200", "a100", "rtx4090"), for
// colo.estimate(..., gpu=NAME) and for estimates made on a machine with that GPU.

#include <stdexcept>
#include <string>

#include "colo/estimate/device_profile.h"

namespace colo::estimate {

// The short name of a GPU model, from the name NVML or torch gives it:
// "NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA H200" -> "h200",
// "NVIDIA A100-SXM4-80GB" -> "a100", "NVIDIA GeForce RTX 4090" -> "rtx4090".
// Lower case letters and digits of the first word that holds a digit, after
// the vendor and product-line words.
std::string profile_key(const std::string& gpu_name);

// The name of colo's reference GPU, whose profile is built in (default_device_profile()).
inline constexpr const char* kReferenceProfileKey = "h100";

// Where profiles are stored: $COLO_PROFILE_DIR, else $XDG_DATA_HOME/colo/profiles,
// else $HOME/.local/share/colo/profiles.
std::string profile_directory();

// No profile is stored under the name asked for; what() says how to make one.
class ProfileNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The profile stored as `key`; for the reference name with none stored, the
// built-in one. Throws ProfileNotFound naming `colo gpus --profile` when
// there is none, std::runtime_error naming the file when it is malformed.
DeviceProfile load_device_profile(const std::string& key);

// Whether a profile is stored as `key` (the built-in one does not count).
bool device_profile_stored(const std::string& key);

// Writes `profile` as `key` (atomically), creating the directory; returns the file's path.
std::string store_device_profile(const DeviceProfile& profile, const std::string& key);

// {"name", "context_bytes", "library_workspace_bytes", "fragmentation": {..},
//  "conv_workspace": {"shapes": ..}}; from_json throws std::runtime_error
// naming the field that is missing or of the wrong type.
std::string device_profile_to_json(const DeviceProfile& profile);
DeviceProfile device_profile_from_json(const std::string& text);

}  // namespace colo::estimate
