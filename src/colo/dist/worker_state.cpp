#include "colo/dist/worker_state.h"

#include <mutex>
#include <stdexcept>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include "colo/core/error.h"
#include "colo/dist/communicator.h"
#include "colo/dist/flat_model.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/run_checkpoint.h"
#include "colo/dist/strategy.h"

namespace colo::dist {
namespace {

// What latest.json says of the run, checked by a resume; the model's size
// is known only once a worker has built it.
nlohmann::json run_description(const ClusterSpec& spec, const FlatModel* model) {
  nlohmann::json run{
      {"strategy", spec.strategy}, {"workers", spec.workers}, {"batch_per_worker", spec.train.batch_size}};
  if (model) run["parameters"] = model->size();
  return run;
}

// The committed checkpoint's step, once its run matches `expected`.
int64_t committed_step_of(const ClusterSpec& spec, const nlohmann::json& expected) {
  const std::string& out = spec.train.output;
  nlohmann::json latest = committed_checkpoint(out);
  for (const auto& [key, value] : expected.items()) {
    nlohmann::json saved = latest["run"].value(key, nlohmann::json());
    if (saved != value) {
      throw InputError(checkpoint_directory(out) + "/latest.json", "run." + key,
                       value.dump() + " as in " + spec.train.source + ", got " + saved.dump() +
                           " (a checkpoint of another run)");
    }
  }
  return latest["step"].get<int64_t>();
}

at::Tensor cpu_generator_state() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_cpu_generator_state(const at::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

nlohmann::json WorkerCounters::to_json() const {
  return {{"step", step},
          {"epoch", epoch},
          {"batch", batch},
          {"samples", samples},
          {"bytes_sent", bytes_sent},
          {"compute_s", compute_s},
          {"communication_s", communication_s},
          {"waiting_s", waiting_s},
          {"wall_s", wall_s},
          {"eval_s", eval_s},
          {"checkpoint_s", checkpoint_s},
          {"time_to_target_s", time_to_target_s},
          {"test_accuracy", test_accuracy},
          {"test_loss", test_loss}};
}

WorkerCounters WorkerCounters::from_json(const nlohmann::json& v) {
  WorkerCounters c;
  c.step = v.at("step").get<int64_t>();
  c.epoch = v.at("epoch").get<int64_t>();
  c.batch = v.at("batch").get<int64_t>();
  c.samples = v.at("samples").get<int64_t>();
  c.bytes_sent = v.at("bytes_sent").get<int64_t>();
  c.compute_s = v.at("compute_s").get<double>();
  c.communication_s = v.at("communication_s").get<double>();
  c.waiting_s = v.at("waiting_s").get<double>();
  c.wall_s = v.at("wall_s").get<double>();
  c.eval_s = v.at("eval_s").get<double>();
  c.checkpoint_s = v.at("checkpoint_s").get<double>();
  c.time_to_target_s = v.at("time_to_target_s").get<double>();
  c.test_accuracy = v.at("test_accuracy").get<double>();
  c.test_loss = v.at("test_loss").get<double>();
  return c;
}

// Worker 0's file holds the run's parameters and optimiser state
// ("replica_tensors": the parameters, then the optimiser's tensors); every
// file then holds its worker's CPU generator state and its strategy's
// tensors (top-k residuals differ per worker).
void checkpoint_worker(const ClusterSpec& spec, int rank, Communicator& group, const FlatModel& model,
                       Strategy& strategy, const WorkerCounters& counters) {
  const std::string& out = spec.train.output;
  auto write_own = [&](std::vector<at::Tensor> run) {
    WorkerCheckpoint checkpoint;
    checkpoint.tensors = std::move(run);
    const size_t replica_tensors = checkpoint.tensors.size();
    StrategyState state = strategy.state();
    checkpoint.tensors.push_back(cpu_generator_state());
    for (const auto& t : state.tensors) checkpoint.tensors.push_back(t);
    checkpoint.values = {{"counters", counters.to_json()},
                         {"replica_tensors", replica_tensors},
                         {"strategy", state.values}};
    write_worker_checkpoint(out, rank, counters.step, checkpoint);
  };
  if (rank != 0) write_own({});
  group.barrier();
  if (rank == 0) {
    write_own(strategy.run_state());
    commit_checkpoint(out, counters.step, run_description(spec, &model));
  }
  group.barrier();
  remove_other_checkpoints(out, rank, counters.step);
}

void check_resumable(const ClusterSpec& spec) { committed_step_of(spec, run_description(spec, nullptr)); }

ResumedWorker resume_worker(const ClusterSpec& spec, int rank, FlatModel& model, FlatOptimizer& optimizer) {
  const std::string& out = spec.train.output;
  int64_t step = committed_step_of(spec, run_description(spec, &model));
  // Errors name the file they are about.
  std::string file = worker_checkpoint_file(out, 0, step);
  try {
    WorkerCheckpoint replica = read_worker_checkpoint(out, 0, step);
    std::vector<at::Tensor> optimizer_state = optimizer.state();
    size_t shared = replica.values.at("replica_tensors").get<size_t>();
    if (shared != 1 + optimizer_state.size() || replica.tensors.size() < shared) {
      throw std::invalid_argument("it holds " + std::to_string(shared) + " parameter and optimiser tensors, this run " +
                                  std::to_string(1 + optimizer_state.size()) + " ([optimizer] changed?)");
    }
    auto load = [&](at::Tensor& into, const at::Tensor& from, const std::string& what) {
      if (into.sizes() != from.sizes() || into.scalar_type() != from.scalar_type()) {
        throw std::invalid_argument(what + " has another shape or type than this run's");
      }
      into.copy_(from);
    };
    load(model.values(), replica.tensors[0], "the parameters");
    for (size_t i = 0; i + 1 < shared; ++i) load(optimizer_state[i], replica.tensors[1 + i], "the optimiser state");

    file = worker_checkpoint_file(out, rank, step);
    WorkerCheckpoint own = rank == 0 ? std::move(replica) : read_worker_checkpoint(out, rank, step);
    size_t first = own.values.at("replica_tensors").get<size_t>();
    if (own.tensors.size() < first + 1) throw std::invalid_argument("it lacks the random generator's state");
    set_cpu_generator_state(own.tensors[first]);
    ResumedWorker resumed;
    resumed.strategy.values = own.values.at("strategy");
    resumed.strategy.tensors.assign(own.tensors.begin() + static_cast<std::ptrdiff_t>(first + 1), own.tensors.end());
    resumed.counters = WorkerCounters::from_json(own.values.at("counters"));
    return resumed;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, "", std::string("a colo dist checkpoint (") + e.what() + ")");
  } catch (const std::invalid_argument& e) {
    throw InputError(file, "", std::string("a checkpoint of this run: ") + e.what());
  }
}

}  // namespace colo::dist
