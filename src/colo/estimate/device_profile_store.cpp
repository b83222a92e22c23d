#include "colo/estimate/device_profile_store.h"

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo::estimate {
namespace {

std::string profile_path(const std::string& key) { return profile_directory() + "/" + key + ".json"; }

void require_key(const std::string& key) {
  bool plain = !key.empty();
  for (char c : key) {
    auto u = static_cast<unsigned char>(c);
    plain = plain && (std::islower(u) || std::isdigit(u));
  }
  if (!plain) {
    throw std::invalid_argument("GPU profile name '" + key + "': use the short name of the model, e.g. h100 or h200");
  }
}

}  // namespace

std::string profile_key(const std::string& gpu_name) {
  static const std::vector<std::string> kSkipped{"nvidia", "geforce", "tesla", "quadro", "amd", "radeon", "instinct"};
  std::stringstream words(gpu_name);
  std::string word;
  std::string key;
  while (words >> word) {
    std::string lower;
    for (char c : word) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool skipped = false;
    for (const auto& s : kSkipped) skipped = skipped || lower == s;
    if (skipped) continue;
    bool has_digit = false;
    for (char c : lower) has_digit = has_digit || std::isdigit(static_cast<unsigned char>(c));
    std::string cleaned;
    for (char c : lower) {
      if (c == '-' || c == '_') break;  // "a100-sxm4-80gb": the model, not its form factor
      if (std::isalnum(static_cast<unsigned char>(c))) cleaned += c;
    }
    key += cleaned;
    if (has_digit) break;  // "rtx" then "4090"
  }
  if (key.empty()) throw std::invalid_argument("cannot name a GPU profile after '" + gpu_name + "'");
  return key;
}

std::string profile_directory() {
  if (const char* dir = std::getenv("COLO_PROFILE_DIR"); dir && *dir) return dir;
  if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data) return std::string(data) + "/colo/profiles";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.local/share/colo/profiles";
}

bool device_profile_stored(const std::string& key) {
  require_key(key);
  return is_regular_file(profile_path(key));
}

DeviceProfile load_device_profile(const std::string& key) {
  require_key(key);
  const std::string path = profile_path(key);
  if (!is_regular_file(path)) {
    if (key == kReferenceProfileKey) return default_device_profile();
    throw ProfileNotFound("no GPU profile '" + key + "' in " + profile_directory() +
                          ": run `colo gpus --profile` on a machine with that GPU (it stores " + path +
                          "), or copy that file here");
  }
  try {
    return device_profile_from_json(read_file(path));
  } catch (const std::exception& e) {
    throw std::runtime_error("GPU profile " + path + ": " + e.what());
  }
}

std::string store_device_profile(const DeviceProfile& profile, const std::string& key) {
  require_key(key);
  make_directories(profile_directory());
  const std::string path = profile_path(key);
  write_file_atomically(path, device_profile_to_json(profile) + "\n");
  return path;
}

std::string device_profile_to_json(const DeviceProfile& profile) {
  nlohmann::json j;
  j["name"] = profile.name;
  j["context_bytes"] = profile.context_bytes;
  j["library_workspace_bytes"] = profile.library_workspace_bytes;
  if (profile.cublas_workspace_bytes > 0) j["cublas_workspace_bytes"] = profile.cublas_workspace_bytes;
  j["fragmentation"] = profile.fragmentation;
  j["conv_workspace"] = nlohmann::json::parse(profile.conv_workspace.to_json());
  if (!profile.conv_workspace_half.empty()) {
    j["conv_workspace_half"] = nlohmann::json::parse(profile.conv_workspace_half.to_json());
  }
  return j.dump(1);
}

DeviceProfile device_profile_from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::runtime_error("not a JSON object");
  auto require = [&](const char* field, bool ok) {
    if (!j.contains(field)) throw std::runtime_error(std::string("missing \"") + field + "\"");
    if (!ok) throw std::runtime_error(std::string("\"") + field + "\" has the wrong type");
  };
  require("name", j.contains("name") && j["name"].is_string());
  require("context_bytes", j.contains("context_bytes") && j["context_bytes"].is_number_integer());
  require("library_workspace_bytes",
          j.contains("library_workspace_bytes") && j["library_workspace_bytes"].is_number_integer());
  require("conv_workspace", j.contains("conv_workspace") && j["conv_workspace"].is_object());
  DeviceProfile p;
  p.name = j["name"].get<std::string>();
  p.context_bytes = j["context_bytes"].get<int64_t>();
  p.library_workspace_bytes = j["library_workspace_bytes"].get<int64_t>();
  if (j.contains("cublas_workspace_bytes")) {
    if (!j["cublas_workspace_bytes"].is_number_integer()) {
      throw std::runtime_error("\"cublas_workspace_bytes\" has the wrong type");
    }
    p.cublas_workspace_bytes = j["cublas_workspace_bytes"].get<int64_t>();
  }
  if (p.context_bytes < 0 || p.library_workspace_bytes < 0 || p.cublas_workspace_bytes < 0) {
    throw std::runtime_error("negative byte counts");
  }
  if (j.contains("fragmentation")) {
    if (!j["fragmentation"].is_object()) throw std::runtime_error("\"fragmentation\" has the wrong type");
    for (const auto& [k, v] : j["fragmentation"].items()) {
      if (!v.is_number() || v.get<double>() <= 0) {
        throw std::runtime_error("fragmentation '" + k + "' is not a positive number");
      }
      p.fragmentation[k] = v.get<double>();
    }
  }
  p.conv_workspace = ConvWorkspaceTable::from_json(j["conv_workspace"].dump());
  if (j.contains("conv_workspace_half")) {
    if (!j["conv_workspace_half"].is_object()) throw std::runtime_error("\"conv_workspace_half\" has the wrong type");
    p.conv_workspace_half = ConvWorkspaceTable::from_json(j["conv_workspace_half"].dump());
  }
  return p;
}

}  // namespace colo::estimate
