#pragma once
// Image data sets laid out as users keep them (torchvision's ImageFolder):
// ROOT/<class>/[...]/<image>.jpg, one folder per class.

#include <cstdint>
#include <string>
#include <vector>

namespace colo::data {

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;  // folder names, sorted; label = index
  std::vector<std::string> paths;    // every image, sorted by class then name
  std::vector<int64_t> labels;       // per path
  int64_t not_jpeg = 0;              // other images (.png, ...) left out
  int64_t size() const { return static_cast<int64_t>(paths.size()); }
};

// Lists ROOT's class folders and the .jpg/.jpeg files in them, at any depth
// (as torchvision's ImageFolder: links to folders are followed, each folder
// walked once). Other images it would take (.png, .bmp, ...) are left out
// and counted, with one line on stderr naming the first. Throws InputError
// (source `root`) when ROOT is missing, has no class folder, or no image.
ImageFolder scan_image_folder(const std::string& root);

// Writes `count` images into ROOT/<label>/<index>.jpg (labels zero-padded,
// "000", "001", ..., so folder order is label order). Image i is `pixels(i)`:
// `size` x `size` RGB, HWC. Creates ROOT; returns the bytes written.
// `on_progress(done)` is called every 1000 images.
template <typename Pixels, typename Progress>
int64_t write_image_folder(const std::string& root, int64_t count, const std::vector<int64_t>& labels,
                           int64_t size, int quality, Pixels pixels, Progress on_progress);

// The writer's one step: writes one image's JPEG file, creating its class
// folder. Returns the file's size in bytes.
int64_t write_jpeg_file(const std::string& root, int64_t label, int64_t index, const std::vector<uint8_t>& hwc,
                        int64_t size, int quality);

template <typename Pixels, typename Progress>
int64_t write_image_folder(const std::string& root, int64_t count, const std::vector<int64_t>& labels,
                           int64_t size, int quality, Pixels pixels, Progress on_progress) {
  int64_t bytes = 0;
  for (int64_t i = 0; i < count; ++i) {
    bytes += write_jpeg_file(root, labels[static_cast<size_t>(i)], i, pixels(i), size, quality);
    if ((i + 1) % 1000 == 0) on_progress(i + 1);
  }
  return bytes;
}

}  // namespace colo::data
