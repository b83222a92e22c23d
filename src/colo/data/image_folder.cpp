#include "colo/data/image_folder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "colo/core/error.h"
#include "colo/data/jpeg_codec.h"

namespace colo::data {
namespace fs = std::filesystem;

namespace {

bool is_jpeg_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg";
}

}  // namespace

ImageFolder scan_image_folder(const std::string& root) {
  std::error_code error;
  if (!fs::is_directory(root, error)) throw InputError(root, "", "a directory of class folders (ROOT/<class>/*.jpg)");
  ImageFolder folder;
  folder.root = root;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) folder.classes.push_back(entry.path().filename().string());
  }
  std::sort(folder.classes.begin(), folder.classes.end());
  if (folder.classes.empty()) throw InputError(root, "", "at least one class folder (ROOT/<class>/*.jpg)");
  for (size_t label = 0; label < folder.classes.size(); ++label) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(fs::path(root) / folder.classes[label])) {
      if (entry.is_regular_file() && is_jpeg_name(entry.path())) names.push_back(entry.path().string());
    }
    std::sort(names.begin(), names.end());
    for (auto& name : names) {
      folder.paths.push_back(std::move(name));
      folder.labels.push_back(static_cast<int64_t>(label));
    }
  }
  if (folder.paths.empty()) throw InputError(root, "", "at least one .jpg image in its class folders");
  return folder;
}

int64_t write_jpeg_file(const std::string& root, int64_t label, int64_t index, const std::vector<uint8_t>& hwc,
                        int64_t size, int quality) {
  char name[32];
  std::snprintf(name, sizeof name, "%03lld", static_cast<long long>(label));
  fs::path dir = fs::path(root) / name;
  fs::create_directories(dir);
  std::snprintf(name, sizeof name, "%08lld.jpg", static_cast<long long>(index));
  std::vector<uint8_t> jpeg = encode_jpeg(RgbImage{size, size, hwc}, quality);
  std::string path = (dir / name).string();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file || std::fwrite(jpeg.data(), 1, jpeg.size(), file) != jpeg.size()) {
    if (file) std::fclose(file);
    throw InputError(path, "", "a writable file");
  }
  std::fclose(file);
  return static_cast<int64_t>(jpeg.size());
}

}  // namespace colo::data
