#include "colo/data/image_folder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <set>

#include "colo/core/error.h"
#include "colo/data/jpeg_codec.h"

namespace colo::data {
namespace fs = std::filesystem;

namespace {

std::string lower_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool is_jpeg_name(const fs::path& path) {
  const std::string ext = lower_extension(path);
  return ext == ".jpg" || ext == ".jpeg";
}

// The other images torchvision's ImageFolder would take: colo's pipeline
// decodes JPEG only, so it leaves them out and says so.
bool is_other_image_name(const fs::path& path) {
  static const char* kOthers[] = {".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"};
  const std::string ext = lower_extension(path);
  return std::any_of(std::begin(kOthers), std::end(kOthers), [&](const char* other) { return ext == other; });
}

// Every file under `dir`, at any depth, following links to folders as
// torchvision's ImageFolder does (os.walk(followlinks=True)); a folder seen
// before (a link that loops back) is walked once.
void list_files(const fs::path& dir, std::set<fs::path>* walked, std::vector<fs::path>* files) {
  std::error_code error;
  const fs::path real = fs::canonical(dir, error);
  if (error || !walked->insert(real).second) return;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_directory(error)) {
      list_files(entry.path(), walked, files);
    } else if (entry.is_regular_file(error)) {
      files->push_back(entry.path());
    }
  }
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
  std::vector<std::string> not_jpeg;
  for (size_t label = 0; label < folder.classes.size(); ++label) {
    std::set<fs::path> walked;
    std::vector<fs::path> files;
    list_files(fs::path(root) / folder.classes[label], &walked, &files);
    std::vector<std::string> names;
    for (const auto& file : files) {
      if (is_jpeg_name(file)) {
        names.push_back(file.string());
      } else if (is_other_image_name(file)) {
        not_jpeg.push_back(file.string());
      }
    }
    std::sort(names.begin(), names.end());
    for (auto& name : names) {
      folder.paths.push_back(std::move(name));
      folder.labels.push_back(static_cast<int64_t>(label));
    }
  }
  if (!not_jpeg.empty()) {
    std::sort(not_jpeg.begin(), not_jpeg.end());
    std::fprintf(stderr, "colo loader: %s: %zu image(s) that are not JPEG left out (first: %s); colo decodes .jpg/.jpeg only\n",
                 root.c_str(), not_jpeg.size(), not_jpeg.front().c_str());
  }
  folder.not_jpeg = static_cast<int64_t>(not_jpeg.size());
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
