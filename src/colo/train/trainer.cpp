#include "colo/train/trainer.h"

#include <cmath>
#include <sstream>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/utils.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/data/dataset_registry.h"
#include "colo/data/loader.h"
#include "colo/gpu/torch_device.h"
#include "colo/models/model_registry.h"
#include "colo/train/checkpoint.h"
#include "colo/train/epoch_loop.h"
#include "colo/train/loader_options.h"
#include "colo/core/progress_file.h"
#include "colo/train/progress_line.h"
#include "colo/train/schedule.h"

namespace colo::train {
namespace {

std::string progress_text(int64_t epoch, int64_t epochs, int64_t batch, int64_t batches,
                          double loss, double samples_per_s) {
  constexpr int kBar = 24;
  int filled = static_cast<int>(kBar * batch / std::max<int64_t>(batches, 1));
  std::ostringstream out;
  out << "epoch " << epoch << "/" << epochs << " [" << std::string(filled, '=')
      << std::string(kBar - filled, ' ') << "] " << batch << "/" << batches << "  loss "
      << std::fixed;
  out.precision(4);
  out << loss << "  ";
  out.precision(0);
  out << samples_per_s << " samples/s";
  return out.str();
}

}  // namespace

Trainer::Trainer(TrainSpec spec)
    : spec_(std::move(spec)),
      device_(gpu::resolve_device(spec_.device, spec_.source, "device")) {
  data::RunData run_data = data::open_run_data(spec_.data, spec_.batch_size, device_);
  dataset_ = std::move(run_data.dataset);
  shared_ = std::move(run_data.shared);
  at::manual_seed(spec_.seed);
  model_ = models::build_model(spec_.model, dataset_.shape);
  model_->to(device_);
  optimizer_ = make_optimizer(spec_.optimizer, model_->parameters());
  ensure_writable_dir(spec_.output, spec_.source, "output");
}

Trainer::~Trainer() = default;

int64_t Trainer::parameter_count() const { return models::parameter_count(*model_); }

int64_t Trainer::steps_per_epoch() const {
  if (shared_) return shared_->batches_per_epoch();
  return (dataset_.train.size() + spec_.batch_size - 1) / spec_.batch_size;
}

std::string Trainer::metrics_path() const { return spec_.output + "/metrics.jsonl"; }
std::string Trainer::checkpoint_path() const { return checkpoint_path_of(spec_); }
std::string Trainer::checkpoint_path_of(const TrainSpec& spec) { return spec.output + "/checkpoint.pt"; }

TestResult Trainer::evaluate() {
  if (shared_) return {std::nan(""), std::nan("")};  // a producer serves no test split
  model_->eval();
  if (!test_loader_) {
    test_loader_ = std::make_unique<data::DataLoader>(dataset_.test, loader_options(spec_, dataset_, device_, false));
  }
  auto results = evaluate_logits([&](const at::Tensor& inputs) { return model_->forward(inputs); }, *test_loader_);
  return results.empty() ? TestResult{} : results.front();
}

std::vector<EpochRecord> Trainer::run(bool resume, const EpochCallback& on_epoch) {
  Stopwatch wall;
  CheckpointState state;
  if (resume) {
    state = load_checkpoint(checkpoint_path(), *model_, *optimizer_, device_);
    keep_json_lines_through(metrics_path(), "epoch", state.epoch);
  } else {
    // Dropout draws from the global generator: start it from the seed here, so
    // a run does not depend on what else the process did since construction.
    at::manual_seed(spec_.seed);
  }
  write_file_atomically(spec_.output + "/spec.toml", read_file(spec_.source));
  JsonLinesWriter metrics(metrics_path(), resume ? JsonLinesWriter::Mode::kAppend
                                                 : JsonLinesWriter::Mode::kTruncate);

  data::TrainingBatches loader =
      shared_ ? data::TrainingBatches(*shared_)
              : data::TrainingBatches(std::make_unique<data::DataLoader>(
                    dataset_.train, loader_options(spec_, dataset_, device_, true)));
  const int64_t batches_per_epoch = loader.batches_per_epoch();
  int64_t total_steps = planned_steps(spec_, batches_per_epoch);
  LearningRateSchedule schedule(spec_.schedule, spec_.optimizer.lr, batches_per_epoch, total_steps);
  ProgressLine progress;
  ProgressWriter report;  // to the scheduler, when it asked ($COLO_PROGRESS_FILE)
  ProgressReading trained;
  std::vector<EpochRecord> records;
  int64_t step = state.step;

  for (int64_t epoch = state.epoch; epoch < spec_.epochs && step < total_steps; ++epoch) {
    Stopwatch epoch_clock;
    const std::optional<double> wait_before = loader.data_wait_s();
    gpu::reset_peak_memory(device_);
    model_->train();
    loader.start_epoch(epoch);
    auto on_device = at::TensorOptions().device(device_);
    at::Tensor loss_sum = at::zeros({}, on_device.dtype(at::kDouble));
    at::Tensor correct = at::zeros({}, on_device.dtype(at::kLong));
    int64_t samples = 0, batch_index = 0;
    double lr = schedule.lr_at(step);
    while (step < total_steps) {
      auto batch = loader.next();
      if (!batch) break;
      lr = schedule.lr_at(step);
      set_learning_rate(*optimizer_, lr);
      at::Tensor logits = model_->forward(batch->inputs);
      at::Tensor loss = at::cross_entropy_loss(logits, batch->labels);
      optimizer_->zero_grad();
      loss.backward();
      optimizer_->step();
      int64_t n = batch->labels.size(0);
      loss_sum += loss.detach().to(at::kDouble) * static_cast<double>(n);
      correct += logits.detach().argmax(1).eq(batch->labels).sum();
      samples += n;
      ++step;
      ++batch_index;
      if (report.due()) {
        gpu::synchronize(device_);  // so the figures count what the device has done
        report.update({trained.samples + samples, trained.train_s + epoch_clock.elapsed_s(), 0,
                       loader.data_wait_s()});
      }
      if (progress.due()) {
        progress.show(progress_text(epoch + 1, spec_.epochs, batch_index, batches_per_epoch,
                                    loss.item<double>(), samples / epoch_clock.elapsed_s()));
      }
    }
    gpu::synchronize(device_);
    double train_s = epoch_clock.elapsed_s();
    progress.clear();
    trained = {trained.samples + samples, trained.train_s + train_s, 0, loader.data_wait_s()};
    report.update(trained);
    report.flush();

    EpochTotals totals{epoch, step, loss_sum.item<double>(), correct.item<int64_t>(), samples, train_s, lr};
    TestResult test = evaluate();
    EpochRecord record = epoch_record(totals, test, device_, epoch_clock.elapsed_s(), wall.elapsed_s());
    if (wait_before) {
      record.data_wait_s = trained.data_wait_s.value_or(*wait_before) - *wait_before;
      record.data_wait_pct = train_s > 0 ? 100.0 * *record.data_wait_s / train_s : 0.0;
    }
    metrics.write(to_json(record));

    bool last = epoch + 1 == spec_.epochs || step >= total_steps;
    if (spec_.checkpoint_every > 0 && ((epoch + 1) % spec_.checkpoint_every == 0 || last)) {
      save_checkpoint(checkpoint_path(), *model_, *optimizer_, CheckpointState{epoch + 1, step});
    }
    records.push_back(record);
    if (on_epoch) on_epoch(record);
    if (!std::isfinite(record.loss)) {
      throw std::runtime_error("training diverged: loss is " + std::to_string(record.loss) +
                               " after epoch " + std::to_string(epoch + 1) + " (lower optimizer.lr?)");
    }
  }
  return records;
}

}  // namespace colo::train
