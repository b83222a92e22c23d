#include "colo/estimate/probe_estimator.h"

#include <unistd.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "colo/data/dataset_registry.h"
#include "colo/gpu/device.h"
#include "colo/gpu/torch_device.h"
#include "colo/models/model_registry.h"
#include "colo/train/optimizer.h"

namespace colo::estimate {

ProbeEstimator::ProbeEstimator(std::string device, DeviceProfile profile)
    : device_(std::move(device)), profile_(std::move(profile)) {}

std::optional<int64_t> measured_context_bytes(int cuda_index) {
  c10::Device cuda(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(cuda_index));
  auto reserved = gpu::reserved_bytes(cuda);
  if (!reserved) return std::nullopt;
  auto devices = gpu::discover_devices();
  if (cuda_index >= static_cast<int>(devices.size())) return std::nullopt;
  for (const auto& p : devices[cuda_index]->processes()) {
    if (p.pid == static_cast<uint32_t>(getpid()) && p.used_mem_bytes > *reserved) {
      return p.used_mem_bytes - *reserved;
    }
  }
  return std::nullopt;
}

namespace {

at::Tensor random_inputs(const data::InputShape& shape, int64_t batch, const c10::Device& device) {
  std::vector<int64_t> sizes{batch};
  sizes.insert(sizes.end(), shape.sample_shape.begin(), shape.sample_shape.end());
  auto opts = at::TensorOptions().device(device);
  return shape.tokens ? at::randint(0, std::max<int64_t>(shape.vocab, 1), sizes, opts.dtype(at::kLong))
                      : at::randn(sizes, opts);
}

}  // namespace

MemoryEstimate ProbeEstimator::estimate(const EstimateRequest& request) {
  if (!request.spec) return MemoryEstimate::unknown(name(), "needs a colo training spec");
  if (gpu::cuda_device_count() == 0) return MemoryEstimate::unknown(name(), "no CUDA device to probe on");
  const train::TrainSpec& spec = *request.spec;
  c10::Device device = gpu::resolve_device(device_, spec.source, "device");
  data::DatasetShape shape = data::dataset_shape(spec.data);
  int64_t batch = std::min(spec.batch_size, std::max<int64_t>(shape.train_size, 1));
  int64_t eval_batch = std::min(spec.eval_batch_size, shape.test_size);

  gpu::release_cached_memory(device);
  gpu::reset_peak_memory(device);
  try {
    at::manual_seed(spec.seed);
    models::ClassifierPtr model = models::build_model(spec.model, shape.input);
    model->to(device);
    auto optimizer = train::make_optimizer(spec.optimizer, model->parameters());
    auto labels_opts = at::TensorOptions().device(device).dtype(at::kLong);
    model->train();
    for (int step = 0; step < 2; ++step) {
      at::Tensor x = random_inputs(shape.input, batch, device);
      at::Tensor y = at::randint(0, std::max<int64_t>(shape.input.classes, 1), {batch}, labels_opts);
      at::Tensor logits = model->forward(x);
      at::Tensor loss = at::cross_entropy_loss(logits, y);
      optimizer->zero_grad();
      loss.backward();
      optimizer->step();
    }
    if (eval_batch > 0) {
      torch::NoGradGuard no_grad;
      model->eval();
      at::Tensor x = random_inputs(shape.input, eval_batch, device);
      at::Tensor logits = model->forward(x);
    }
    gpu::synchronize(device);
  } catch (const std::exception& e) {
    gpu::release_cached_memory(device);
    std::string what = e.what();
    return MemoryEstimate::unknown(name(), "the probe failed: " + what.substr(0, what.find('\n')));
  }
  // Library workspaces created by earlier work in this process stay in the
  // peak, as they would in the job's own process.
  int64_t peak = gpu::peak_reserved_bytes(device).value_or(0);
  int64_t context = measured_context_bytes(device.index()).value_or(profile_.context_bytes);
  gpu::release_cached_memory(device);

  MemoryEstimate e;
  e.estimator = name();
  e.known = true;
  MemoryBreakdown b;
  b.activations = peak;  // the probe sees only the allocator's total
  b.context = context;
  e.breakdown = b;
  e.bytes = b.total();
  e.uncertainty = peak / 50;
  e.reason = "measured: two steps at batch " + std::to_string(batch) + " on " + gpu::describe_device(device);
  return e;
}

}  // namespace colo::estimate
