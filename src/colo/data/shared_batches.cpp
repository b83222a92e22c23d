#include "colo/data/shared_batches.h"

#include <cstdio>

#include <ATen/ATen.h>

#include "colo/data/dataset_registry.h"
#include "colo/data/loader_server.h"

namespace colo::data {
namespace {

std::string address_of(const std::string& loader) {
  return loader_is_data_file(loader) ? parse_loader_serve_spec(loader).address : loader;
}

}  // namespace

SharedBatches::SharedBatches(const std::string& loader, int64_t batch_size, const c10::Device& device,
                             double timeout_s)
    : device_(device) {
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
  std::vector<int64_t> dims{client_->batch_size()};
  for (int64_t d : client_->sample_shape()) dims.push_back(d);
  if (device_ring_) {
    auto [pixels, labels] = device_ring_->next();
    ++served_;
    return Batch{pixels.to(at::kFloat).mul_(scale_).add_(shift_), labels};
  }
  at::Tensor pixels = at::empty(dims, at::TensorOptions().dtype(at::kByte));
  at::Tensor labels = at::empty({client_->batch_size()}, at::TensorOptions().dtype(at::kLong));
  client_->next_batch(pixels.data_ptr<uint8_t>(), labels.data_ptr<int64_t>());
  ++served_;
  at::Tensor inputs = pixels.to(device_).to(at::kFloat).mul_(scale_).add_(shift_);
  return Batch{inputs, labels.to(device_)};
}

RunData open_run_data(const DataSpec& spec, int64_t batch_size, const c10::Device& device) {
  RunData data;
  if (!find_dataset(spec.name).streamed) {
    data.dataset = load_dataset(spec);
    return data;
  }
  data.shared = std::make_unique<SharedBatches>(spec.loader, batch_size, device, spec.loader_timeout_s);
  data.dataset.name = spec.name + " (" + spec.loader + ")";
  data.dataset.shape = data.shared->shape();
  return data;
}

}  // namespace colo::data
