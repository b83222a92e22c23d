#pragma once
// Trains one model as a training spec describes.

#include <functional>
#include <memory>
#include <vector>

#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include "colo/data/dataset.h"
#include "colo/data/shared_batches.h"
#include "colo/data/training_batches.h"
#include "colo/models/classifier.h"
#include "colo/train/epoch_loop.h"
#include "colo/train/epoch_record.h"
#include "colo/train/train_spec.h"

namespace colo::train {

// One training run. The constructor does everything that can fail on bad
// input — resolves the device, reads the data, builds the model, checks the
// output directory — and throws InputError before anything is written. run()
// then trains, evaluates on the test split after every epoch, appends one
// record per epoch to `<output>/metrics.jsonl`, and checkpoints to
// `<output>/checkpoint.pt`. On the CPU, two runs of the same spec produce the
// same parameters and records (timings aside).
//
// With [data] name = "shared", training batches come from a shared loader's
// producer (data/shared_batches.h): an epoch is one pass over its images,
// there is no test split (test figures are NaN, written as null), and each
// progress report carries the time spent waiting for data.
class Trainer {
 public:
  explicit Trainer(TrainSpec spec);
  ~Trainer();

  using EpochCallback = std::function<void(const EpochRecord&)>;

  // Trains to the end of the spec's epochs or step budget. With `resume`,
  // continues from `<output>/checkpoint.pt` (InputError if absent or not
  // matching) and keeps the metrics of the epochs it covers. Returns the
  // records of the epochs this call ran.
  std::vector<EpochRecord> run(bool resume, const EpochCallback& on_epoch = {});

  const TrainSpec& spec() const { return spec_; }
  const c10::Device& device() const { return device_; }
  const data::Dataset& dataset() const { return dataset_; }  // shared data: name and shape only
  models::Classifier& model() { return *model_; }
  int64_t parameter_count() const;
  int64_t steps_per_epoch() const;
  // `<output>/checkpoint.pt`: what run() writes and `resume` reads.
  std::string checkpoint_path() const;
  // Where a trainer of `spec` keeps its checkpoint, before one is made.
  static std::string checkpoint_path_of(const TrainSpec& spec);

 private:
  TestResult evaluate();  // test split, in eval mode
  std::string metrics_path() const;

  TrainSpec spec_;
  c10::Device device_;
  data::Dataset dataset_;
  std::unique_ptr<data::SharedBatches> shared_;  // set for [data] name = "shared"
  models::ClassifierPtr model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  // Built at the first evaluation and kept: normalising statistics and a
  // device copy of the test split are made once per run, not per epoch.
  std::unique_ptr<data::DataLoader> test_loader_;
};

}  // namespace colo::train
