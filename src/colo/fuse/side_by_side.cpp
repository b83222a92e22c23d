#include "colo/fuse/side_by_side.h"

#include <optional>
#include <stdexcept>

#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/core/progress_file.h"
#include "colo/core/stopwatch.h"
#include "colo/gpu/torch_device.h"

namespace colo::fuse {

void train_side_by_side(const std::vector<ArrayTrainer*>& members, const GroupEpochCallback& on_epoch,
                        const Halving* halving, const GroupStopCallback& on_stop) {
  if (members.empty()) throw std::invalid_argument("train_side_by_side: no arrays");
  const ArrayTrainer& lead = *members.front();
  const train::TrainSpec& first = lead.specs_.front();
  for (const ArrayTrainer* m : members) {
    const train::TrainSpec& s = m->specs_.front();
    if (&m->dataset_ != &lead.dataset_ || m->device_ != lead.device_ || s.batch_size != first.batch_size ||
        s.epochs != first.epochs || m->total_steps_ != lead.total_steps_ ||
        s.data_order_seed() != first.data_order_seed()) {
      throw InputError(s.source, "batch_size",
                       "arrays trained side by side share one data set, device, batch size, "
                       "epochs and batch order");
    }
  }
  Stopwatch wall;
  data::TrainingBatches loader = lead.training_batches();
  at::manual_seed(first.seed);
  int64_t step = 0;
  ProgressWriter report;  // every model's samples, when a scheduler or colo compare asks
  ProgressReading trained;
  auto models_trained = [&] {
    int64_t models = 0;
    for (const ArrayTrainer* m : members) models += m->models();
    return models;
  };
  for (int64_t epoch = 0; epoch < first.epochs && step < lead.total_steps_; ++epoch) {
    Stopwatch epoch_clock;
    gpu::reset_peak_memory(lead.device_);
    for (ArrayTrainer* m : members) m->begin_epoch();
    loader.start_epoch(epoch);
    int64_t samples = 0;
    while (step < lead.total_steps_) {
      auto batch = loader.next();
      if (!batch) break;
      for (ArrayTrainer* m : members) m->train_batch(*batch);
      samples += batch->labels.size(0);
      ++step;
      if (report.due()) {
        gpu::synchronize(lead.device_);  // so the figures count what the device has done
        report.update({trained.samples + samples * models_trained(), trained.train_s + epoch_clock.elapsed_s(), 0,
                       loader.data_wait_s()});
      }
    }
    gpu::synchronize(lead.device_);
    double train_s = epoch_clock.elapsed_s();
    trained = {trained.samples + samples * models_trained(), trained.train_s + train_s, 0, loader.data_wait_s()};
    report.update(trained);
    report.flush();
    for (size_t i = 0; i < members.size(); ++i) {
      members[i]->end_epoch(
          epoch, step, samples, train_s, epoch_clock, wall,
          [&](int64_t model, const train::EpochRecord& r) { if (on_epoch) on_epoch(i, model, r); }, halving,
          [&](int64_t model, int64_t e) { if (on_stop) on_stop(i, model, e); });
    }
  }
}

namespace {

// One array of train_each_side_by_side and where it is in its own pass.
struct Lane {
  Lane(ArrayTrainer* t, data::TrainingBatches b) : trainer(t), batches(std::move(b)) {}
  ArrayTrainer* trainer;
  data::TrainingBatches batches;
  int64_t epoch = 0, step = 0, samples = 0;
  Stopwatch epoch_clock;
  double evaluating_at_start = 0;  // the process's evaluation seconds when this epoch began
  bool done = false;
};

}  // namespace

void train_each_side_by_side(const std::vector<ArrayTrainer*>& members, const GroupEpochCallback& on_epoch) {
  if (members.empty()) throw std::invalid_argument("train_each_side_by_side: no arrays");
  for (const ArrayTrainer* m : members) {
    if (m->device_ != members.front()->device_) {
      throw InputError(m->specs_.front().source, "device", "arrays trained side by side share one device");
    }
  }
  const c10::Device device = members.front()->device_;
  Stopwatch wall;
  at::manual_seed(members.front()->specs_.front().seed);
  std::vector<Lane> lanes;
  for (ArrayTrainer* m : members) {
    lanes.emplace_back(m, m->training_batches());
    m->begin_epoch();
    lanes.back().batches.start_epoch(0);
  }
  ProgressWriter report;  // every model's samples, when a scheduler or colo compare asks
  int64_t reported = 0;   // samples of the epochs that have ended
  double evaluating_s = 0;
  auto in_flight = [&] {
    int64_t samples = reported;
    for (const Lane& l : lanes) samples += l.done ? 0 : l.samples * l.trainer->models();
    return samples;
  };
  // Ends lane `i`'s epoch: evaluation, records, and the next epoch or the end.
  auto end_epoch = [&](size_t i) {
    Lane& lane = lanes[i];
    ArrayTrainer& t = *lane.trainer;
    gpu::synchronize(device);
    // Other arrays' evaluations inside this epoch trained nothing: left out.
    const double train_s = lane.epoch_clock.elapsed_s() - (evaluating_s - lane.evaluating_at_start);
    Stopwatch evaluation;
    t.end_epoch(lane.epoch, lane.step, lane.samples, train_s, lane.epoch_clock, wall,
                [&](int64_t model, const train::EpochRecord& r) { if (on_epoch) on_epoch(i, model, r); }, nullptr,
                {});
    evaluating_s += evaluation.elapsed_s();
    reported += lane.samples * t.models();
    lane.samples = 0;
    lane.done = ++lane.epoch >= t.specs_.front().epochs || lane.step >= t.total_steps_;
    if (lane.done) return;
    t.begin_epoch();
    lane.batches.start_epoch(lane.epoch);
    lane.epoch_clock.restart();
    lane.evaluating_at_start = evaluating_s;
  };
  for (size_t running = lanes.size(); running > 0;) {
    running = 0;
    for (size_t i = 0; i < lanes.size(); ++i) {
      Lane& lane = lanes[i];
      if (lane.done) continue;
      ++running;
      std::optional<data::Batch> batch;
      if (lane.step < lane.trainer->total_steps_) batch = lane.batches.next();
      if (!batch) {
        end_epoch(i);
        continue;
      }
      lane.trainer->train_batch(*batch);
      lane.samples += batch->labels.size(0);
      ++lane.step;
    }
    if (report.due()) {
      gpu::synchronize(device);  // so the figures count what the device has done
      report.update({in_flight(), wall.elapsed_s() - evaluating_s, 0, std::nullopt});
    }
  }
  report.update({reported, wall.elapsed_s() - evaluating_s, 0, std::nullopt});
  report.flush();
}

}  // namespace colo::fuse
