#include "colo/cli/loader_command.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "colo/cli/loader_producer_commands.h"
#include "colo/core/error.h"
#include "colo/data/dataset_registry.h"
#include "colo/data/device_ring.h"
#include "colo/data/image_pipeline.h"

namespace colo::cli {
namespace {

// A registered image data set's first `limit` images (0: all) of `split`,
// resized to `size` x `size`, as write-images writes them.
ImagesToWrite dataset_images(const std::string& source, const std::string& source_path, const std::string& split,
                             int64_t limit, int64_t size) {
  ImagesToWrite result;
  data::DataSpec spec;
  spec.name = source;
  try {
    spec.path = source_path.empty() ? data::find_dataset(source).default_path : source_path;
  } catch (const std::out_of_range&) {
    throw InputError("--source", "", "synthetic or an image data set colo reads (fashion-mnist, mnist, cifar10), not '" +
                                         source + "'");
  }
  if (spec.path.empty()) throw InputError("--path", "", "the folder of " + source + "'s files (it has no default)");
  data::Dataset dataset = data::load_dataset(spec);
  data::Split& part = split == "test" ? dataset.test : dataset.train;
  if (part.inputs.scalar_type() != at::kByte || part.inputs.dim() < 3) {
    throw std::invalid_argument("colo loader write-images: " + source + " is not an image data set");
  }
  int64_t n = limit > 0 ? std::min(limit, part.size()) : part.size();
  at::Tensor images = part.inputs.slice(0, 0, n).contiguous();
  if (images.dim() == 3) images = images.unsqueeze(1);
  at::Tensor label_tensor = part.labels.slice(0, 0, n).contiguous();
  result.labels.assign(label_tensor.data_ptr<int64_t>(), label_tensor.data_ptr<int64_t>() + n);
  data::ImagePipelineSpec resize;
  resize.size = size;
  resize.crop = resize.flip = false;
  result.pixels = [images, size, resize](int64_t i) {
    at::Tensor hwc = images[i].expand({3, images.size(2), images.size(3)}).permute({1, 2, 0}).contiguous();
    std::vector<uint8_t> chw(static_cast<size_t>(3 * size * size)), out_hwc(chw.size());
    data::crop_resize_flip(hwc.data_ptr<uint8_t>(), hwc.size(1), hwc.size(0), resize, 0, chw.data());
    for (int64_t p = 0; p < size * size; ++p) {
      for (int64_t c = 0; c < 3; ++c) out_hwc[static_cast<size_t>(p * 3 + c)] = chw[static_cast<size_t>(c * size * size + p)];
    }
    return out_hwc;
  };
  return result;
}

}  // namespace

void add_loader_command(CLI::App& app, int& exit_code) {
  LoaderProviders providers;
  providers.mirror = [](const data::LoaderServeSpec& spec) { return data::make_ring_mirror(spec); };
  providers.dataset_images = dataset_images;
  add_loader_producer_commands(app, exit_code, providers);
}

}  // namespace colo::cli
