#pragma once
// Trains an array of models that share one architecture, batch size and data
// as one fused model: one data pass feeds all of them.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include "colo/core/stopwatch.h"
#include "colo/data/dataset.h"
#include "colo/data/loader.h"
#include "colo/data/shared_batches.h"
#include "colo/data/training_batches.h"
#include "colo/fuse/array_step.h"
#include "colo/fuse/fused_classifier.h"
#include "colo/fuse/fused_optimizer.h"
#include "colo/fuse/sweep_plan.h"
#include "colo/models/classifier.h"
#include "colo/train/epoch_loop.h"
#include "colo/train/epoch_record.h"
#include "colo/train/train_spec.h"

namespace colo::fuse {

struct ArrayOptions {
  bool cuda_graph = true;       // capture the whole step on CUDA
  bool cudnn_benchmark = true;  // let cuDNN time its algorithms (CUDA)
  bool channels_last = false;   // NHWC convolutions
  bool bf16_autocast = false;   // forward passes under bfloat16 autocast (losses in float32)
  // colo's own CUDA kernels for small-group convolutions (grouped_conv.h)
  // and ReLU + 2x2 max pooling (relu_max_pool.h), where they apply; they
  // agree with cuDNN/ATen to float32 rounding and train 32 LeNets 1.7x
  // faster on an H100 (bench/results/fusion/own_kernels/).
  bool own_cuda_kernels = true;
  // Training batches from a shared loader's producer instead of the data
  // set's split (not owned; the data set then holds only its name and
  // shape): an epoch is one pass over the producer's images, and there is
  // no test split (test figures NaN), so successive halving cannot rank.
  data::SharedBatches* shared = nullptr;
};

// Successive halving inside the array: after each epoch in `rungs`, the
// models outside the best `keep` fraction (by test accuracy) stop training.

class ArrayTrainer;

// Called per array (its position in the members list) and model.
using GroupEpochCallback = std::function<void(size_t array, int64_t model, const train::EpochRecord&)>;
using GroupStopCallback = std::function<void(size_t array, int64_t model, int64_t epoch)>;

class ArrayTrainer {
 public:
  // `specs`: one per model; all share model architecture (fusion_key),
  // batch_size, eval_batch_size, epochs, max_steps, data and the optimiser's
  // name. Model i is initialised from specs[i].seed exactly as `colo train`
  // initialises it; the data order follows specs[0].data_order_seed(). Throws
  // InputError when the specs cannot share an array.
  ArrayTrainer(std::vector<train::TrainSpec> specs, const data::Dataset& dataset,
               c10::Device device, ArrayOptions options = {});
  ~ArrayTrainer();

  // Called after each epoch for each model still training: its position in
  // the constructor's specs and its record (as `colo train` would write it;
  // peak memory is the whole array's).
  using EpochCallback = std::function<void(int64_t model, const train::EpochRecord&)>;
  // Called when models stop at a halving rung.
  using StopCallback = std::function<void(int64_t model, int64_t epoch)>;

  // Trains to the end of the specs' epochs or step budget.
  void run(const EpochCallback& on_epoch, const Halving* halving = nullptr,
           const StopCallback& on_stop = {});

  // Trains `steps` more steps over the training split (continuing where the
  // last call stopped) and waits for them; returns seconds. For throughput
  // measurement: each step runs as in run(), the next batch cut on the
  // caller's stream while the step trains on the array's own.
  double train_steps(int64_t steps);

  // Copies the current parameters of the model at constructor position
  // `model` (still training) into a single model.
  models::ClassifierPtr extract(int64_t model) const;

  int64_t models() const { return static_cast<int64_t>(active_.size()); }
  bool graphed() const { return step_ && step_->graphed(); }
  std::string graph_error() const { return step_ ? step_->graph_error() : ""; }

 private:
  friend void train_side_by_side(const std::vector<ArrayTrainer*>&, const GroupEpochCallback&,
                                 const Halving*, const GroupStopCallback&);
  friend void train_each_side_by_side(const std::vector<ArrayTrainer*>&, const GroupEpochCallback&);
  void begin_epoch();
  void train_batch(const data::Batch& batch);
  void end_epoch(int64_t epoch, int64_t step, int64_t samples, double train_s, const Stopwatch& epoch_clock,
                 const Stopwatch& wall, const EpochCallback& on_epoch, const Halving* halving,
                 const StopCallback& on_stop);
  void build_step();
  void keep_models(const std::vector<int64_t>& positions);
  std::vector<train::TestResult> evaluate();  // per active model
  data::TrainingBatches training_batches() const;  // the split's own loader, or options_.shared

  std::vector<train::TrainSpec> specs_;
  const data::Dataset& dataset_;
  c10::Device device_;
  ArrayOptions options_;
  std::vector<int64_t> active_;  // constructor positions of the models in the array
  FusedClassifierPtr array_;
  std::unique_ptr<FusedOptimizer> optimizer_;
  std::unique_ptr<ArrayStep> step_;
  std::optional<c10::Stream> stream_;  // CUDA: the side stream all work runs on
  std::unique_ptr<data::TrainingBatches> bench_loader_;
  std::unique_ptr<data::DataLoader> test_loader_;  // built at the first evaluation, kept for the run
  int64_t bench_epoch_ = 0;
  int64_t steps_per_epoch_ = 0;
  int64_t total_steps_ = 0;
};

}  // namespace colo::fuse
