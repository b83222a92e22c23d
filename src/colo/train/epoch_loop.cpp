#include "colo/train/epoch_loop.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "colo/gpu/torch_device.h"

namespace colo::train {

int64_t planned_steps(const TrainSpec& spec, int64_t batches_per_epoch) {
  int64_t steps = spec.epochs * batches_per_epoch;
  return spec.max_steps > 0 ? std::min(steps, spec.max_steps) : steps;
}

std::vector<TestResult> evaluate_logits(const std::function<at::Tensor(const at::Tensor&)>& forward,
                                        data::DataLoader& loader) {
  torch::NoGradGuard no_grad;
  loader.start_epoch(0);
  at::Tensor correct, loss_sum;
  while (auto batch = loader.next()) {
    at::Tensor logits = forward(batch->inputs);
    if (logits.dim() == 2) logits = logits.unsqueeze(0);
    const int64_t models = logits.size(0), rows = logits.size(1);
    at::Tensor labels = batch->labels.unsqueeze(0).expand({models, rows});
    at::Tensor losses = at::cross_entropy_loss(logits.flatten(0, 1), labels.flatten(),
                                               {}, at::Reduction::None)
                            .view({models, rows})
                            .sum(1)
                            .to(at::kDouble);
    at::Tensor right = logits.argmax(2).eq(labels).sum(1);
    loss_sum = loss_sum.defined() ? loss_sum + losses : losses;
    correct = correct.defined() ? correct + right : right;
  }
  std::vector<TestResult> results;
  if (!correct.defined()) return results;
  double samples = static_cast<double>(std::max<int64_t>(loader.samples(), 1));
  at::Tensor c = correct.cpu(), l = loss_sum.cpu();
  for (int64_t k = 0; k < c.size(0); ++k) {
    results.push_back({static_cast<double>(c[k].item<int64_t>()) / samples, l[k].item<double>() / samples});
  }
  return results;
}

EpochRecord epoch_record(const EpochTotals& totals, const TestResult& test, c10::Device device,
                         double epoch_s, double wall_s) {
  const double samples = static_cast<double>(std::max<int64_t>(totals.samples, 1));
  EpochRecord record;
  record.epoch = totals.epoch + 1;
  record.step = totals.step;
  record.loss = totals.loss_sum / samples;
  record.train_accuracy = static_cast<double>(totals.correct) / samples;
  record.samples_per_s = static_cast<double>(totals.samples) / std::max(totals.train_s, 1e-9);
  record.test_accuracy = test.accuracy;
  record.test_loss = test.loss;
  record.lr = totals.lr;
  record.peak_mem_bytes = gpu::peak_memory_bytes(device);
  record.peak_reserved_bytes = gpu::peak_reserved_bytes(device);
  record.epoch_s = epoch_s;
  record.wall_s = wall_s;
  return record;
}

}  // namespace colo::train
