#include "colo/dist/cluster_simulator.h"
#include "colo/dist/strategy_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include <ATen/ATen.h>

#include "colo/core/json_lines.h"
#include "colo/core/paths.h"
#include "colo/core/table.h"
#include "colo/data/dataset_registry.h"
#include "colo/data/loader.h"
#include "colo/dist/evaluation.h"
#include "colo/dist/flat_model.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/link_model.h"
#include "colo/dist/switch_rule.h"
#include "colo/models/model_registry.h"
#include "colo/train/loader_options.h"

namespace colo::dist {
namespace {

const c10::Device kCpu(c10::DeviceType::CPU);

// The real model and data behind a simulation: global parameters, an
// optimiser over them, and one data shard per simulated worker.
class Training {
 public:
  explicit Training(const ClusterSpec& spec) : dataset_(data::load_dataset(spec.train.data)) {
    at::manual_seed(spec.train.seed);
    model_ = models::build_model(spec.train.model, dataset_.shape);
    model_->train();
    flat_ = std::make_unique<FlatModel>(*model_);
    global_ = flat_->values().clone();
    gradient_ = at::zeros_like(global_);
    optimizer_ = std::make_unique<FlatOptimizer>(global_, gradient_, spec.train.optimizer);
    int64_t workers = static_cast<int64_t>(spec.simulate.workers.size());
    data::LoaderOptions shared = train::loader_options(spec.train, dataset_, kCpu, true);
    test_options_ = test_loader_options(shared, spec.train.eval_batch_size);
    for (int64_t w = 0; w < workers; ++w) {
      data::LoaderOptions options = shared;
      options.shard_rank = w;
      options.shard_count = workers;
      options.prefetch = 0;
      loaders_.push_back(std::make_unique<data::DataLoader>(dataset_.train, options));
      epochs_.push_back(0);
      loaders_.back()->start_epoch(0);
    }
    if (loaders_.front()->batches_per_epoch() == 0) {
      throw std::runtime_error("the training split is smaller than one global batch");
    }
  }

  int64_t parameters() const { return global_.numel(); }
  const at::Tensor& global() const { return global_; }

  data::Batch next_batch(size_t worker) {
    auto batch = loaders_[worker]->next();
    if (!batch) {
      loaders_[worker]->start_epoch(++epochs_[worker]);
      batch = loaders_[worker]->next();
    }
    return *batch;
  }

  // Puts the gradient of the mean loss over `batch` at `parameters` into
  // the gradient buffer; returns the loss.
  double gradient_at(const at::Tensor& parameters, const data::Batch& batch) {
    {
      at::NoGradGuard no_grad;
      flat_->values().copy_(parameters);
    }
    flat_->zero_grad();
    at::Tensor loss = at::cross_entropy_loss(model_->forward(batch.inputs), batch.labels);
    loss.backward();
    gradient_.copy_(flat_->gradients());
    return loss.item<double>();
  }

  void apply(double lr) { optimizer_->step(lr); }

  // From now on the optimiser is `spec` (momentum compensation), keeping the state it can.
  void change_optimizer(const train::OptimizerSpec& spec) {
    auto old_state = optimizer_->state();
    auto replacement = std::make_unique<FlatOptimizer>(global_, gradient_, spec);
    auto state = replacement->state();
    size_t moments = std::min(old_state.size(), state.size()) - 1;
    for (size_t m = 0; m < moments; ++m) state[m].copy_(old_state[m]);
    state.back().copy_(old_state.back());
    optimizer_ = std::move(replacement);
  }

  double accuracy() {
    {
      at::NoGradGuard no_grad;
      flat_->values().copy_(global_);
    }
    double loss = 0;
    return test_accuracy(*model_, dataset_.test, test_options_, &loss);
  }

 private:
  data::Dataset dataset_;
  data::LoaderOptions test_options_;
  models::ClassifierPtr model_;
  std::unique_ptr<FlatModel> flat_;
  at::Tensor global_, gradient_;
  std::unique_ptr<FlatOptimizer> optimizer_;
  std::vector<std::unique_ptr<data::DataLoader>> loaders_;
  std::vector<int64_t> epochs_;
};

class Simulation {
 public:
  Simulation(const ClusterSpec& spec, const std::string& strategy)
      : spec_(spec), sim_(spec.simulate), training_(spec) {
    run_.strategy = strategy;
    bytes_ = sim_.model_mb > 0 ? sim_.model_mb * 1e6 : 4.0 * static_cast<double>(training_.parameters());
    batch_ = spec.train.batch_size;
    servers_ = std::max<int64_t>(1, spec.servers);
    for (const auto& w : sim_.workers) compute_s_.push_back(batch_ * sim_.compute_ms_per_sample / 1000 / w.speed);
  }

  SimulatedRun run() {
    const std::string& s = run_.strategy;
    double t = 0;
    if (s == "allreduce" || s == "switch") t = synchronous(ring_allreduce_s(bytes_, sim_.workers), s == "switch");
    if (s == "ps-sync") t = synchronous(sync_ps_exchange_s(bytes_, sim_, servers_), false);
    if (s == "ps-async" || (s == "switch" && run_.switched_at_update >= 0)) asynchronous(t);
    run_.simulated_s = ended_s_ >= 0 ? ended_s_ : sim_.max_time_s;
    evaluate_until(run_.simulated_s);
    run_.final_accuracy = run_.evaluations.empty() ? 0 : run_.evaluations.back()["test_accuracy"].get<double>();
    return run_;
  }

 private:
  // Lockstep steps of the global batch; returns the virtual time reached
  // (earlier than the budget when a switch fires).
  double synchronous(double exchange_s, bool may_switch) {
    double slowest = *std::max_element(compute_s_.begin(), compute_s_.end());
    run_.step_s = slowest + exchange_s;
    std::unique_ptr<SwitchDecider> rule = make_switch_decider(spec_.switch_rule);
    double fastest = *std::min_element(compute_s_.begin(), compute_s_.end());
    auto planned = static_cast<int64_t>(sim_.max_time_s / run_.step_s);
    if (sim_.steps_per_worker > 0) planned = std::min(planned, sim_.steps_per_worker);
    double t = 0;
    if (!sim_.train) {
      run_.updates = planned;
      run_.samples = planned * batch_ * static_cast<int64_t>(compute_s_.size());
      if (sim_.steps_per_worker > 0 && planned == sim_.steps_per_worker) {
        ended_s_ = static_cast<double>(planned) * run_.step_s;
      }
      return sim_.max_time_s;
    }
    while (t + run_.step_s <= sim_.max_time_s && run_.updates < planned) {
      std::vector<at::Tensor> inputs, labels;
      for (size_t w = 0; w < compute_s_.size(); ++w) {
        data::Batch b = training_.next_batch(w);
        inputs.push_back(b.inputs);
        labels.push_back(b.labels);
      }
      evaluate_until(t + run_.step_s);
      last_loss_ = training_.gradient_at(training_.global(), data::Batch{at::cat(inputs), at::cat(labels)});
      training_.apply(spec_.train.optimizer.lr);
      t += run_.step_s;
      ++run_.updates;
      run_.samples += batch_ * static_cast<int64_t>(compute_s_.size());
      if (may_switch && rule->observe({run_.updates, planned, last_loss_, slowest, fastest})) {
        run_.switched_at_update = run_.updates;
        return t;
      }
    }
    if (sim_.steps_per_worker > 0 && run_.updates == sim_.steps_per_worker) ended_s_ = t;
    return sim_.max_time_s;
  }

  // Workers push and pull at their own pace from `start`, each until its
  // steps run out (steps_per_worker, less the lockstep steps before); the
  // servers serve one push at a time (their links carry every exchange).
  // With [param_server] overlap a worker sends its push and computes its
  // next step at once, taking the reply before its next push: its gradient
  // is computed on the parameters of the reply before the last.
  void asynchronous(double start) {
    ParamServerOptions async = spec_.param_server;
    async.mode = "async";
    training_.change_optimizer(server_optimizer(spec_.train.optimizer, async, static_cast<int64_t>(compute_s_.size())));
    size_t workers = compute_s_.size();
    const bool overlap = spec_.param_server.overlap;
    // The parameters (and their update count) the next push's gradient is
    // computed on; with overlap also those of the reply the worker takes next.
    std::vector<at::Tensor> snapshot(workers), replied(workers);
    std::vector<int64_t> version(workers, run_.updates), replied_version(workers, run_.updates);
    std::vector<double> arrival(workers), sent(workers);
    for (size_t w = 0; w < workers; ++w) {
      if (sim_.train) snapshot[w] = training_.global().clone();
      if (sim_.train && overlap) replied[w] = snapshot[w].clone();
      sent[w] = start + compute_s_[w];
      arrival[w] = sent[w] + worker_transfer_s(bytes_, sim_.workers[w]);
    }
    double service = 2 * server_transfer_s(bytes_, sim_, servers_);
    double server_free = start, staleness = 0;
    int64_t pushes = 0;
    const int64_t unlimited = std::numeric_limits<int64_t>::max();
    std::vector<int64_t> steps_left(workers, sim_.steps_per_worker > 0 ? sim_.steps_per_worker - run_.updates : unlimited);
    for (size_t w = 0; w < workers; ++w) {
      if (steps_left[w] <= 0) arrival[w] = std::numeric_limits<double>::infinity();
    }
    while (true) {
      size_t w = static_cast<size_t>(std::min_element(arrival.begin(), arrival.end()) - arrival.begin());
      if (std::isinf(arrival[w])) {  // every worker has run its steps
        ended_s_ = server_free;
        break;
      }
      double done = std::max(arrival[w], server_free) + service;
      if (done > sim_.max_time_s) break;
      if (sim_.train) {
        evaluate_until(done);
        last_loss_ = training_.gradient_at(snapshot[w], training_.next_batch(w));
        training_.apply(spec_.train.optimizer.lr);
      }
      staleness += static_cast<double>(run_.updates - version[w]);
      ++pushes;
      ++run_.updates;
      run_.samples += batch_;
      server_free = done;
      double download = worker_transfer_s(bytes_, sim_.workers[w]);
      if (overlap) {
        // Its next push: computed on the reply it took before this push,
        // sent once both that step and this push's reply are done.
        if (sim_.train) {
          snapshot[w].copy_(replied[w]);
          replied[w].copy_(training_.global());
        }
        version[w] = replied_version[w];
        replied_version[w] = run_.updates;
        sent[w] = std::max(sent[w] + compute_s_[w], done + download);
      } else {
        if (sim_.train) snapshot[w].copy_(training_.global());
        version[w] = run_.updates;
        sent[w] = done + download + compute_s_[w];
      }
      arrival[w] = sent[w] + worker_transfer_s(bytes_, sim_.workers[w]);
      if (steps_left[w] != unlimited && --steps_left[w] == 0) arrival[w] = std::numeric_limits<double>::infinity();
    }
    run_.mean_staleness = pushes > 0 ? staleness / static_cast<double>(pushes) : 0;
  }

  // Evaluates the global parameters at every evaluation time before `t`.
  void evaluate_until(double t) {
    if (!sim_.train) return;
    while (next_eval_ <= t && next_eval_ <= sim_.max_time_s) {
      double accuracy = training_.accuracy();
      if (run_.time_to_target_s < 0 && spec_.target_accuracy > 0 && accuracy >= spec_.target_accuracy) {
        run_.time_to_target_s = next_eval_;
      }
      run_.evaluations.push_back({{"strategy", run_.strategy}, {"time_s", next_eval_}, {"updates", run_.updates},
                                  {"samples", run_.samples}, {"test_accuracy", accuracy}, {"train_loss", last_loss_}});
      next_eval_ += sim_.eval_every_s;
    }
  }

  const ClusterSpec& spec_;
  const SimulationSpec& sim_;
  Training training_;
  SimulatedRun run_;
  double bytes_ = 0;
  int64_t batch_ = 0;
  int64_t servers_ = 1;
  std::vector<double> compute_s_;
  double next_eval_ = 0;
  double last_loss_ = 0;
  double ended_s_ = -1;  // when every worker had run its steps_per_worker; -1 = ran to max_time_s
};

}  // namespace

std::vector<SimulatedRun> simulate_cluster(const ClusterSpec& spec) {
  const std::string& out = spec.train.output;
  ensure_writable_dir(out, spec.train.source, "output");
  JsonLinesWriter records(out + "/simulate.jsonl", JsonLinesWriter::Mode::kTruncate);
  TablePrinter table({{"strategy", 10}, {"step ms", 9}, {"updates", 9}, {"samples/s", 10}, {"staleness", 10},
                      {"final acc", 10}, {"to target s", 12}, {"switch@", 8}});
  table.header();
  std::vector<SimulatedRun> runs;
  nlohmann::json summary{{"workers", spec.simulate.workers.size()}, {"servers", spec.servers},
                         {"trained", spec.simulate.train},
                         {"target_accuracy", spec.target_accuracy}, {"max_time_s", spec.simulate.max_time_s}};
  const auto& strategies = spec.simulate.strategies.empty() ? simulated_strategy_names() : spec.simulate.strategies;
  for (const auto& strategy : strategies) {
    SimulatedRun run = Simulation(spec, strategy).run();
    for (const auto& e : run.evaluations) records.write(e);
    table.row({run.strategy, run.step_s > 0 ? fixed(1000 * run.step_s, 1) : "-", std::to_string(run.updates),
               fixed(static_cast<double>(run.samples) / run.simulated_s, 0), fixed(run.mean_staleness, 2),
               spec.simulate.train ? fixed(run.final_accuracy, 4) : "-", run.time_to_target_s >= 0 ? fixed(run.time_to_target_s, 2) : "-",
               run.switched_at_update >= 0 ? std::to_string(run.switched_at_update) : "-"});
    summary["strategies"][run.strategy] = {
        {"step_s", run.step_s}, {"updates", run.updates}, {"samples", run.samples},
        {"samples_per_s", static_cast<double>(run.samples) / run.simulated_s},
        {"mean_staleness", run.mean_staleness},
        {"final_accuracy", spec.simulate.train ? nlohmann::json(run.final_accuracy) : nlohmann::json()},
        {"time_to_target_s", run.time_to_target_s >= 0 ? nlohmann::json(run.time_to_target_s) : nlohmann::json()},
        {"switched_at_update", run.switched_at_update}};
    runs.push_back(std::move(run));
  }
  write_file_atomically(out + "/simulate-summary.json", summary.dump(2) + "\n");
  return runs;
}

}  // namespace colo::dist
