#include "colo/data/shared_batches.h"

#include <cstdio>
#include <utility>

#include <ATen/ATen.h>

#include "colo/data/dataset_registry.h"
#include "colo/core/stopwatch.h"
#include "colo/data/image_folder.h"
#include "colo/data/loader_server.h"

namespace colo::data {
namespace {

std::string address_of(const std::string& loader) {
  return loader_is_data_file(loader) ? parse_loader_serve_spec(loader).address : loader;
}

}  // namespace

SharedBatches::SharedBatches(const std::string& loader, int64_t batch_size, const c10::Device& device,
                             double timeout_s, bool load_locally_if_lost)
    : device_(device), data_file_(load_locally_if_lost && loader_is_data_file(loader) ? loader : "") {
  std::string address = address_of(loader);
  check_loader_address(address);
  client_ = std::make_unique<SharedLoaderClient>(address, batch_size, timeout_s);
  if (device_.is_cuda() && client_->device_ring().is_object()) {
    try {
      device_ring_ = std::make_unique<DeviceRingReader>(*client_, device_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "colo: the shared loader's device ring cannot be read here (%s); copying through host memory\n",
                   e.what());
    }
  }
  const int64_t channels = static_cast<int64_t>(client_->mean().size());
  std::vector<float> scale, shift;
  for (int64_t c = 0; c < channels; ++c) {
    double sd = client_->std()[static_cast<size_t>(c)], mean = client_->mean()[static_cast<size_t>(c)];
    scale.push_back(static_cast<float>(1.0 / (255.0 * sd)));
    shift.push_back(static_cast<float>(-mean / sd));
  }
  auto on_device = at::TensorOptions().dtype(at::kFloat).device(device_);
  scale_ = at::tensor(scale, at::kFloat).view({1, channels, 1, 1}).to(on_device);
  shift_ = at::tensor(shift, at::kFloat).view({1, channels, 1, 1}).to(on_device);
}

InputShape SharedBatches::shape() const {
  InputShape shape;
  shape.sample_shape = client_->sample_shape();
  shape.classes = client_->classes();
  return shape;
}

std::optional<Batch> SharedBatches::next() {
  if (served_ >= batches_per_epoch()) return std::nullopt;
  if (!local_) {
    try {
      Batch batch = next_shared();
      ++served_;
      return batch;
    } catch (const ProducerLost& lost) {
      if (data_file_.empty()) throw;
      load_locally(lost.what());
    }
  }
  Batch batch = next_local();
  ++served_;
  return batch;
}

nlohmann::json SharedBatches::stats() const {
  nlohmann::json stats = client_->stats();
  if (local_) {
    stats["wait_s"] = stats.value("wait_s", 0.0) + local_wait_s_;
    stats["loads_locally"] = true;
    stats["producer_lost"] = lost_;
  }
  return stats;
}

Batch SharedBatches::to_device(const at::Tensor& pixels, const at::Tensor& labels) const {
  return Batch{pixels.to(device_).to(at::kFloat).mul_(scale_).add_(shift_), labels.to(device_)};
}

std::pair<at::Tensor, at::Tensor> SharedBatches::host_batch() const {
  std::vector<int64_t> dims{client_->batch_size()};
  for (int64_t d : client_->sample_shape()) dims.push_back(d);
  return {at::empty(dims, at::TensorOptions().dtype(at::kByte)),
          at::empty({client_->batch_size()}, at::TensorOptions().dtype(at::kLong))};
}

Batch SharedBatches::next_shared() {
  if (device_ring_) {
    auto [pixels, labels] = device_ring_->next();
    return to_device(pixels, labels);  // already there: normalised in place of a copy
  }
  auto [pixels, labels] = host_batch();
  client_->next_batch(pixels.data_ptr<uint8_t>(), labels.data_ptr<int64_t>());
  return to_device(pixels, labels);
}

void SharedBatches::load_locally(const std::string& why) {
  std::fprintf(stderr, "colo: %s; this run now loads its own batches from %s\n", why.c_str(), data_file_.c_str());
  lost_ = why;
  device_ring_.reset();
  ImagePipelineSpec pipeline = parse_loader_serve_spec(data_file_).pipeline;
  local_ = std::make_unique<ImageDecoder>(scan_image_folder(pipeline.root), pipeline);
}

// Each pass over the images in the order a producer of the same pipeline
// gives its passes.
Batch SharedBatches::next_local() {
  const int64_t n = client_->batch_size(), images = local_->folder().size();
  if (local_order_.empty() || local_next_ + n > images) {
    local_order_ = image_pass_order(images, local_->spec().seed, ++local_pass_);
    local_next_ = 0;
  }
  auto [pixels, labels] = host_batch();
  Stopwatch decoding;
  local_->fill(local_order_.data() + local_next_, n, static_cast<uint64_t>(local_pass_), pixels.data_ptr<uint8_t>(),
               labels.data_ptr<int64_t>());
  local_wait_s_ += decoding.elapsed_s();
  local_next_ += n;
  return to_device(pixels, labels);
}

RunData open_run_data(const DataSpec& spec, int64_t batch_size, const c10::Device& device) {
  RunData data;
  if (!find_dataset(spec.name).streamed) {
    data.dataset = load_dataset(spec);
    return data;
  }
  data.shared = std::make_unique<SharedBatches>(spec.loader, batch_size, device, spec.loader_timeout_s,
                                                spec.load_locally_if_lost);
  data.dataset.name = spec.name + " (" + spec.loader + ")";
  data.dataset.shape = data.shared->shape();
  return data;
}

}  // namespace colo::data
