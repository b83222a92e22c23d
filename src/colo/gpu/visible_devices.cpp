// visible_positions(): CUDA_VISIBLE_DEVICES read against the GPUs NVML lists.

#include "colo/gpu/visible_devices.h"

#include <algorithm>
#include <cctype>

namespace colo::gpu {
namespace {

std::string trimmed(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

bool is_index(const std::string& entry) {
  return !entry.empty() && std::all_of(entry.begin(), entry.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string listing(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "none";
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ", ") + std::to_string(d.index) + " " + d.uuid;
  return out;
}

[[noreturn]] void refuse(const std::vector<DeviceInfo>& devices, const std::string& entry, const std::string& why) {
  throw VisibleDevicesError("CUDA_VISIBLE_DEVICES: '" + entry + "' " + why + " (GPUs here: " + listing(devices) + ")");
}

// The position of the device `entry` names; throws when none or several match.
size_t position_of(const std::vector<DeviceInfo>& devices, const std::string& entry) {
  if (entry.rfind("MIG-", 0) == 0) refuse(devices, entry, "is a MIG instance; colo schedules whole GPUs");
  std::vector<size_t> matches;
  for (size_t i = 0; i < devices.size(); ++i) {
    bool match = is_index(entry) ? entry.size() <= 9 && std::stoi(entry) == devices[i].index
                                 : !devices[i].uuid.empty() && devices[i].uuid.rfind(entry, 0) == 0;
    if (match) matches.push_back(i);
  }
  if (matches.empty()) refuse(devices, entry, "names no GPU of this machine");
  if (matches.size() > 1) refuse(devices, entry, "is the start of several GPUs' UUIDs");
  return matches.front();
}

}  // namespace

std::vector<size_t> visible_positions(const std::vector<DeviceInfo>& devices,
                                      const std::optional<std::string>& visible) {
  std::vector<size_t> positions;
  if (!visible) {
    for (size_t i = 0; i < devices.size(); ++i) positions.push_back(i);
    return positions;
  }
  if (trimmed(*visible).empty()) return positions;
  size_t start = 0;
  while (start <= visible->size()) {
    size_t comma = visible->find(',', start);
    std::string entry = trimmed(visible->substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (entry.empty()) throw VisibleDevicesError("CUDA_VISIBLE_DEVICES='" + *visible + "' has an empty entry");
    size_t position = position_of(devices, entry);
    if (std::find(positions.begin(), positions.end(), position) != positions.end()) {
      throw VisibleDevicesError("CUDA_VISIBLE_DEVICES='" + *visible + "' names GPU " +
                                std::to_string(devices[position].index) + " twice");
    }
    positions.push_back(position);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return positions;
}

}  // namespace colo::gpu
