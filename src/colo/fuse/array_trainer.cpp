#include "colo/fuse/array_trainer.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "colo/core/error.h"
#include "colo/core/progress_file.h"
#include "colo/core/stopwatch.h"
#include "colo/data/loader.h"
#include "colo/fuse/model_array.h"
#include "colo/fuse/side_by_side.h"
#include "colo/gpu/torch_device.h"
#include "colo/models/model_registry.h"
#include "colo/train/loader_options.h"
#include "colo/train/schedule.h"

#if COLO_HAS_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace colo::fuse {
namespace {

// Makes `stream` current when there is one: graph capture refuses the
// default stream, and an array's steps, graph and evaluation share its own
// stream (batches come from the caller's stream; see train_batch).
class SideStream {
 public:
  explicit SideStream(const std::optional<c10::Stream>& stream) {
    if (stream) guard_.emplace(*stream);
  }

 private:
  std::optional<c10::StreamGuard> guard_;
};

void check_shareable(const std::vector<train::TrainSpec>& specs) {
  if (specs.empty()) throw std::invalid_argument("ArrayTrainer: no models");
  const train::TrainSpec& first = specs.front();
  for (const auto& spec : specs) {
    auto differs = [&](const char* field, bool different) {
      if (different) {
        throw InputError(spec.source, field,
                         "models of one array must share this field (the fuser groups them)");
      }
    };
    differs("batch_size", spec.batch_size != first.batch_size);
    differs("eval_batch_size", spec.eval_batch_size != first.eval_batch_size);
    differs("epochs", spec.epochs != first.epochs);
    differs("max_steps", spec.max_steps != first.max_steps);
    differs("optimizer.name", spec.optimizer.name != first.optimizer.name ||
                                  spec.optimizer.nesterov != first.optimizer.nesterov);
    differs("model", fusion_key(spec.model) != fusion_key(first.model));
  }
}

}  // namespace

ArrayTrainer::ArrayTrainer(std::vector<train::TrainSpec> specs, const data::Dataset& dataset,
                           c10::Device device, ArrayOptions options)
    : specs_(std::move(specs)), dataset_(dataset), device_(device), options_(options) {
  check_shareable(specs_);
  const train::TrainSpec& first = specs_.front();
  std::vector<models::ModelSpec> model_specs;
  std::vector<models::ClassifierPtr> singles;
  std::vector<train::OptimizerSpec> optimizer_specs;
  for (size_t i = 0; i < specs_.size(); ++i) {
    active_.push_back(static_cast<int64_t>(i));
    model_specs.push_back(specs_[i].model);
    optimizer_specs.push_back(specs_[i].optimizer);
    at::manual_seed(specs_[i].seed);  // as the Trainer seeds before building
    singles.push_back(models::build_model(specs_[i].model, dataset.shape));
  }
  array_ = build_fused_model(model_specs, dataset.shape);
  load_models(*array_, singles);
  array_->to(device_);
  array_->set_convolution_options(options_.channels_last, options_.own_cuda_kernels);
  optimizer_ = std::make_unique<FusedOptimizer>(array_->parameters(), optimizer_specs);

  steps_per_epoch_ = options_.shared ? options_.shared->batches_per_epoch()
                                     : (dataset.train.size() + first.batch_size - 1) / first.batch_size;
  total_steps_ = train::planned_steps(first, steps_per_epoch_);
  at::Tensor table = at::empty({std::max<int64_t>(total_steps_, 1), models()}, at::kFloat);
  auto rows = table.accessor<float, 2>();
  for (int64_t m = 0; m < models(); ++m) {
    const train::TrainSpec& spec = specs_[static_cast<size_t>(m)];
    train::LearningRateSchedule schedule(spec.schedule, spec.optimizer.lr, steps_per_epoch_,
                                         total_steps_);
    for (int64_t s = 0; s < table.size(0); ++s) rows[s][m] = static_cast<float>(schedule.lr_at(s));
  }
  optimizer_->set_lr_table(table);
#if COLO_HAS_CUDA
  if (device_.is_cuda()) {
    if (options_.cudnn_benchmark) at::globalContext().setBenchmarkCuDNN(true);
    stream_ = c10::cuda::getStreamFromPool(false, device_.index());
  }
#endif
  build_step();
}

ArrayTrainer::~ArrayTrainer() = default;

void ArrayTrainer::build_step() {
  step_ = std::make_unique<ArrayStep>(*array_, *optimizer_, options_.cuda_graph, options_.bf16_autocast);
}

models::ClassifierPtr ArrayTrainer::extract(int64_t model) const {
  auto found = std::find(active_.begin(), active_.end(), model);
  if (found == active_.end()) throw std::invalid_argument("ArrayTrainer: model not in the array");
  auto single = models::build_model(specs_[static_cast<size_t>(model)].model, dataset_.shape);
  single->to(device_);
  store_model(*array_, found - active_.begin(), *single);
  return single;
}

void ArrayTrainer::keep_models(const std::vector<int64_t>& positions) {
  std::vector<models::ModelSpec> model_specs;
  std::vector<int64_t> survivors;
  for (int64_t k : positions) {
    survivors.push_back(active_[static_cast<size_t>(k)]);
    model_specs.push_back(specs_[static_cast<size_t>(survivors.back())].model);
  }
  auto compact = build_fused_model(model_specs, dataset_.shape);
  compact->to(device_);
  compact->set_convolution_options(options_.channels_last, options_.own_cuda_kernels);
  select_models(*array_, positions, *compact);
  auto optimizer = std::make_unique<FusedOptimizer>(optimizer_->select(positions, compact->parameters()));
  step_.reset();
  array_ = compact;
  optimizer_ = std::move(optimizer);
  active_ = survivors;
  build_step();
}

std::vector<train::TestResult> ArrayTrainer::evaluate() {
  if (options_.shared) {  // a producer serves no test split
    return std::vector<train::TestResult>(static_cast<size_t>(models()), {std::nan(""), std::nan("")});
  }
  array_->eval();
  if (!test_loader_) {
    test_loader_ = std::make_unique<data::DataLoader>(dataset_.test,
                                                      train::loader_options(specs_.front(), dataset_, device_, false));
  }
  return train::evaluate_logits([&](const at::Tensor& inputs) { return array_->forward(inputs); }, *test_loader_);
}

void ArrayTrainer::begin_epoch() {
  array_->train();
  step_->reset_totals();
}

void ArrayTrainer::train_batch(const data::Batch& batch) {
#if COLO_HAS_CUDA
  if (stream_) {
    // The batch was cut on the caller's stream: wait for it, and keep its
    // memory from being reused while this stream still reads it.
    c10::Event ready(c10::DeviceType::CUDA);
    ready.record(c10::cuda::getCurrentCUDAStream(device_.index()));
    ready.block(*stream_);
    batch.inputs.record_stream(*stream_);
    batch.labels.record_stream(*stream_);
  }
#endif
  SideStream stream(stream_);
  step_->run(batch.inputs, batch.labels);
}

void ArrayTrainer::end_epoch(int64_t epoch, int64_t step, int64_t samples, double train_s,
                             const Stopwatch& epoch_clock, const Stopwatch& wall,
                             const EpochCallback& on_epoch, const Halving* halving,
                             const StopCallback& on_stop) {
  SideStream stream(stream_);
  auto tests = evaluate();
  at::Tensor losses = step_->loss_sums().cpu(), correct = step_->correct().cpu();
  for (int64_t k = 0; k < models(); ++k) {
    int64_t model = active_[static_cast<size_t>(k)];
    const train::TrainSpec& spec = specs_[static_cast<size_t>(model)];
    train::LearningRateSchedule schedule(spec.schedule, spec.optimizer.lr, steps_per_epoch_, total_steps_);
    train::EpochTotals totals{epoch, step, losses[k].item<double>(), correct[k].item<int64_t>(), samples, train_s,
                              schedule.lr_at(std::max<int64_t>(step - 1, 0))};
    train::EpochRecord record = train::epoch_record(totals, tests[static_cast<size_t>(k)], device_,
                                                    epoch_clock.elapsed_s(), wall.elapsed_s());
    if (on_epoch) on_epoch(model, record);
  }
  if (!halving || !is_rung(*halving, epoch + 1) || models() < 2) return;
  std::vector<double> accuracies;
  for (const auto& test : tests) accuracies.push_back(test.accuracy);
  std::vector<int64_t> order = halving_survivors(accuracies, halving->keep);
  if (order.size() >= static_cast<size_t>(models())) return;
  for (int64_t k = 0; k < models(); ++k) {
    bool kept = std::binary_search(order.begin(), order.end(), k);
    if (!kept && on_stop) on_stop(active_[static_cast<size_t>(k)], epoch + 1);
  }
  keep_models(order);
}

void ArrayTrainer::run(const EpochCallback& on_epoch, const Halving* halving,
                       const StopCallback& on_stop) {
  train_side_by_side({this}, [&](size_t, int64_t model, const train::EpochRecord& r) { if (on_epoch) on_epoch(model, r); },
                     halving, [&](size_t, int64_t model, int64_t epoch) { if (on_stop) on_stop(model, epoch); });
}

data::TrainingBatches ArrayTrainer::training_batches() const {
  if (options_.shared) return data::TrainingBatches(*options_.shared);
  return data::TrainingBatches(std::make_unique<data::DataLoader>(
      dataset_.train, train::loader_options(specs_.front(), dataset_, device_, true)));
}

double ArrayTrainer::train_steps(int64_t steps) {
  if (!bench_loader_) {
    bench_loader_ = std::make_unique<data::TrainingBatches>(training_batches());
    bench_loader_->start_epoch(bench_epoch_);
  }
  array_->train();
  gpu::synchronize(device_);
  Stopwatch clock;
  for (int64_t done = 0; done < steps; ++done) {
    auto batch = bench_loader_->next();
    if (!batch) {
      bench_loader_->start_epoch(++bench_epoch_);
      batch = bench_loader_->next();
    }
    train_batch(*batch);  // as run() trains: batches cut on the caller's stream, the step on its own
  }
  gpu::synchronize(device_);
  return clock.elapsed_s();
}

}  // namespace colo::fuse
