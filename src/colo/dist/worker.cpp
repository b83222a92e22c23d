#include "colo/dist/worker.h"

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <stdexcept>

#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/core/json_lines.h"
#include "colo/core/stopwatch.h"
#include "colo/data/dataset_registry.h"
#include "colo/data/loader.h"
#include "colo/dist/communicator.h"
#include "colo/dist/evaluation.h"
#include "colo/dist/flat_model.h"
#include "colo/dist/flat_optimizer.h"
#include "colo/dist/param_server.h"
#include "colo/dist/run_checkpoint.h"
#include "colo/dist/strategy_registry.h"
#include "colo/dist/worker_state.h"
#include "colo/gpu/torch_device.h"
#include "colo/models/model_registry.h"
#include "colo/train/epoch_loop.h"
#include "colo/train/loader_options.h"
#include "colo/train/schedule.h"

namespace colo::dist {
namespace {

// Worker r trains on cuda:(r mod visible GPUs) unless the spec names a device.
c10::Device worker_device(const ClusterSpec& spec, int rank) {
  c10::Device device = gpu::resolve_device(spec.train.device, spec.train.source, "device");
  bool named_index = spec.train.device.rfind("cuda:", 0) == 0;
  if (device.is_cuda() && !named_index) {
    int count = std::max(1, gpu::cuda_device_count());
    device = c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(rank % count));
  }
  return device;
}

// Server s holds its key range on cuda:(s mod visible GPUs), the workers'
// GPUs, when the workers train on CUDA; else on the CPU.
c10::Device server_device(const ClusterSpec& spec, int64_t index) {
  c10::Device device = gpu::resolve_device(spec.train.device, spec.train.source, "device");
  if (!device.is_cuda()) return device;
  int count = std::max(1, gpu::cuda_device_count());
  c10::Device chosen(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index % count));
  gpu::make_current(chosen);
  return chosen;
}

std::string backend_for(const ClusterSpec& spec, const c10::Device& device) {
  if (spec.backend != "auto") return spec.backend;
  return device.is_cuda() ? "nccl" : "gloo";
}

// The bytes of a float32 tensor, as it lies in memory (little-endian here).
std::string raw_floats(const at::Tensor& values) {
  at::Tensor host = values.to(at::kCPU).contiguous();
  return std::string(static_cast<const char*>(host.data_ptr()), static_cast<size_t>(host.numel()) * 4);
}

}  // namespace

void run_worker(const ClusterSpec& spec, Rendezvous& rendezvous, int rank) {
  c10::Device device = worker_device(spec, rank);
  gpu::make_current(device);
  std::string backend = backend_for(spec, device);
  if (backend == "nccl" && spec.workers > gpu::cuda_device_count()) {
    throw std::runtime_error("NCCL needs one GPU per worker: " + std::to_string(spec.workers) + " workers but " +
                             std::to_string(gpu::cuda_device_count()) + " visible GPU(s) (" + spec.train.source +
                             ": lower cluster.workers, or set backend = \"gloo\")");
  }
  // Fewer NCCL channels leave more SMs to the backward pass the reductions
  // overlap; a value the user exported wins.
  if (backend == "nccl" && spec.allreduce.nccl_channels > 0) {
    std::string channels = std::to_string(spec.allreduce.nccl_channels);
    ::setenv("NCCL_MAX_NCHANNELS", channels.c_str(), 0);
    ::setenv("NCCL_MAX_CTAS", channels.c_str(), 0);
  }
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_s * 1000));
  Communicator group(rendezvous, "workers", rank, static_cast<int>(spec.workers), backend, device, timeout);

  data::Dataset dataset = data::load_dataset(spec.train.data);
  at::manual_seed(spec.train.seed);
  models::ClassifierPtr model = models::build_model(spec.train.model, dataset.shape);
  model->to(device);
  model->train();
  FlatModel flat(*model);
  // Every worker starts from worker 0's parameters, whatever its generator did.
  group.broadcast(flat.values(), 0).wait();
  FlatOptimizer optimizer(flat.values(), flat.gradients(), spec.train.optimizer);
  // A resumed run loads the checkpoint before making its strategy: a
  // parameter server's servers start from what it loaded.
  ResumedWorker resumed;
  if (spec.resume) resumed = resume_worker(spec, rank, flat, optimizer);
  std::unique_ptr<Strategy> strategy = make_strategy({flat, optimizer, group, rendezvous, spec, rank});
  if (spec.resume) {
    try {
      strategy->restore(resumed.strategy);
    } catch (const std::invalid_argument& e) {
      throw InputError(checkpoint_directory(spec.train.output), "",
                       std::string("a checkpoint of this run: ") + e.what());
    }
  }
  auto* switching = dynamic_cast<SwitchStrategy*>(strategy.get());

  data::LoaderOptions options = train::loader_options(spec.train, dataset, device, true);
  data::LoaderOptions test_options = test_loader_options(options, spec.train.eval_batch_size);
  options.shard_rank = rank;
  options.shard_count = spec.workers;
  data::DataLoader loader(dataset.train, options);
  int64_t per_epoch = loader.batches_per_epoch();
  if (per_epoch == 0) {
    throw std::runtime_error("the training split has fewer samples than one global batch (" +
                             std::to_string(spec.train.batch_size * spec.workers) + ")");
  }
  int64_t total_steps = train::planned_steps(spec.train, per_epoch);
  train::LearningRateSchedule schedule(spec.train.schedule, spec.train.optimizer.lr, per_epoch, total_steps);

  const std::string& out = spec.train.output;
  const std::string steps_path = out + "/steps-rank" + std::to_string(rank) + ".jsonl";
  const std::string evals_path = out + "/eval.jsonl";
  WorkerCounters progress = resumed.counters;
  if (spec.resume) {
    keep_json_lines_through(steps_path, "step", progress.step);
    if (rank == 0) keep_json_lines_through(evals_path, "step", progress.step);
    if (rank == 0) {
      std::fprintf(stderr, "resuming at step %lld (epoch %lld, batch %lld) from %s\n",
                   static_cast<long long>(progress.step),
                   static_cast<long long>(progress.epoch + 1), static_cast<long long>(progress.batch),
                   checkpoint_directory(out).c_str());
    }
  }
  const auto mode = spec.resume ? JsonLinesWriter::Mode::kAppend : JsonLinesWriter::Mode::kTruncate;
  JsonLinesWriter steps(steps_path, mode);
  std::unique_ptr<JsonLinesWriter> evals;
  if (rank == 0) evals = std::make_unique<JsonLinesWriter>(evals_path, mode);

  Stopwatch wall;
  const double wall_before = progress.wall_s;  // the resumed run's wall time before this process
  auto wall_s = [&] { return wall_before + wall.elapsed_s(); };
  auto train_s = [&] { return wall_s() - progress.eval_s; };
  auto record_eval = [&](int64_t epoch) {
    Stopwatch clock;
    progress.test_accuracy = test_accuracy(*model, dataset.test, test_options, &progress.test_loss);
    progress.eval_s += clock.elapsed_s();
    if (progress.time_to_target_s < 0 && spec.target_accuracy > 0 && progress.test_accuracy >= spec.target_accuracy) {
      progress.time_to_target_s = train_s();
    }
    evals->write({{"step", progress.step}, {"epoch", epoch}, {"train_s", train_s()},
                  {"test_accuracy", progress.test_accuracy},
                  {"test_loss", progress.test_loss}, {"strategy", strategy->name()}});
    std::fprintf(stderr, "step %lld  %s  train %.1f s  test accuracy %.4f\n", static_cast<long long>(progress.step),
                 strategy->name().c_str(), train_s(), progress.test_accuracy);
  };

  int64_t loader_epoch = -1;
  while (progress.epoch < spec.train.epochs && progress.step < total_steps) {
    if (loader_epoch != progress.epoch) {
      loader.start_epoch(progress.epoch);
      loader_epoch = progress.epoch;
      // A resumed run reads past the batches its checkpoint had trained on:
      // the loader's order and augmentation depend only on (seed, epoch).
      for (int64_t b = 0; b < progress.batch; ++b) loader.next();
    }
    Stopwatch clock;
    auto batch = loader.next();
    if (!batch) throw std::logic_error("the loader ended an epoch before its batches_per_epoch()");
    double lr = schedule.lr_at(progress.step);
    strategy->begin_step();
    at::Tensor loss = at::cross_entropy_loss(model->forward(batch->inputs), batch->labels);
    loss.backward();
    gpu::synchronize_current_stream(device);
    double compute_s = clock.elapsed_s();
    ExchangeCost cost = strategy->finish_step(progress.step, lr);
    double loss_value = loss.item<double>();
    std::string phase = strategy->name();
    if (strategy->synchronous()) {
      // Every worker's loss and compute time: the mean loss drives a
      // switch; the slowest compute time says how long this one waited.
      at::Tensor mine = at::tensor({loss_value, compute_s}, at::kDouble).to(device);
      std::vector<at::Tensor> all;
      for (int64_t r = 0; r < spec.workers; ++r) all.push_back(at::empty_like(mine));
      group.allgather(all, mine).wait();
      at::Tensor table = at::stack(all).cpu();
      double mean_loss = table.select(1, 0).mean().item<double>();
      double slowest = table.select(1, 1).max().item<double>();
      double fastest = table.select(1, 1).min().item<double>();
      cost.waiting_s = std::min(cost.communication_s, slowest - compute_s);
      cost.communication_s -= cost.waiting_s;
      if (switching && switching->observe({progress.step + 1, total_steps, mean_loss, slowest, fastest}) && rank == 0) {
        std::fprintf(stderr, "step %lld: %s; switching to the asynchronous parameter server\n",
                     static_cast<long long>(progress.step + 1), switching->switch_reason().c_str());
      }
    }
    ++progress.step;
    ++progress.batch;
    progress.samples += batch->labels.size(0);
    progress.compute_s += compute_s;
    progress.communication_s += cost.communication_s;
    progress.waiting_s += cost.waiting_s;
    progress.bytes_sent += cost.bytes_sent;
    nlohmann::json record{{"rank", rank}, {"step", progress.step}, {"epoch", progress.epoch + 1}, {"strategy", phase},
                          {"loss", loss_value}, {"compute_s", compute_s}, {"communication_s", cost.communication_s},
                          {"waiting_s", cost.waiting_s}, {"bytes_sent", cost.bytes_sent},
                          {"step_s", clock.elapsed_s()}, {"wall_s", wall_s()}};
    if (!cost.phases_s.empty()) record["exchange_phases_s"] = cost.phases_s;
    steps.write(record);
    if (!std::isfinite(loss_value)) throw std::runtime_error("training diverged: loss is " + std::to_string(loss_value));
    // Evaluations: every eval_every steps, at each epoch's end and after the last step.
    bool epoch_done = progress.batch == per_epoch;
    bool due = spec.eval_every > 0 && progress.step % spec.eval_every == 0;
    if (rank == 0 && (due || epoch_done || progress.step == total_steps)) record_eval(progress.epoch + 1);
    if (epoch_done) {
      ++progress.epoch;
      progress.batch = 0;
    }
    // After the evaluation, so that a resumed run neither repeats nor misses one.
    if (spec.checkpoint_steps > 0 && progress.step % spec.checkpoint_steps == 0) {
      Stopwatch writing;
      progress.wall_s = wall_s();
      checkpoint_worker(spec, rank, group, flat, *strategy, progress);
      progress.checkpoint_s += writing.elapsed_s();
    }
  }
  strategy->finish();
  if (strategy->synchronous()) group.barrier();
  write_file_atomically(out + "/params-rank" + std::to_string(rank) + ".f32", raw_floats(flat.values()));
  if (rank != 0) return;
  double n = static_cast<double>(std::max<int64_t>(progress.step, 1));
  nlohmann::json result{{"strategy", spec.strategy},
                        {"mode", spec.strategy == "param_server" ? spec.param_server.mode : ""},
                        {"workers", spec.workers},
                        {"servers", spec.uses_servers() ? spec.servers : 0},
                        {"backend", backend},
                        {"device", gpu::describe_device(device)},
                        {"parameters", flat.size()},
                        {"steps", progress.step},
                        {"batch_per_worker", spec.train.batch_size},
                        {"train_s", train_s()},
                        {"samples_per_s",
                         static_cast<double>(progress.samples * spec.workers) / std::max(train_s(), 1e-9)},
                        {"test_accuracy", progress.test_accuracy},
                        {"test_loss", progress.test_loss},
                        {"target_accuracy", spec.target_accuracy},
                        {"time_to_target_s", progress.time_to_target_s >= 0 ? nlohmann::json(progress.time_to_target_s)
                                                                            : nlohmann::json()},
                        {"switched_at_step", switching ? switching->switched_at() : -1},
                        {"checkpoint_s", progress.checkpoint_s},
                        {"resumed", spec.resume},
                        {"mean_compute_s", progress.compute_s / n},
                        {"mean_communication_s", progress.communication_s / n},
                        {"mean_waiting_s", progress.waiting_s / n},
                        {"bytes_sent_per_step", static_cast<double>(progress.bytes_sent) / n}};
  write_file_atomically(out + "/result.json", result.dump(2) + "\n");
}

void run_rank(const ClusterSpec& spec, const Membership& member) {
  if (member.world != spec.world()) {
    throw std::runtime_error("the run has " + std::to_string(member.world) + " processes but " +
                             spec.train.source + " asks for " + std::to_string(spec.world()) + " (" +
                             std::to_string(spec.workers) + " workers + " +
                             std::to_string(spec.world() - spec.workers) + " servers)");
  }
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_s * 1000));
  Rendezvous rendezvous(member, timeout);
  if (member.rank < spec.workers) {
    run_worker(spec, rendezvous, member.rank);
  } else {
    at::set_num_threads(1);  // elementwise updates; spare the cores for the workers
    int64_t index = member.rank - spec.workers;
    ServerReport report = run_param_server(spec, rendezvous, index, server_device(spec, index));
    const double pushes = static_cast<double>(std::max<int64_t>(report.pushes, 1));
    std::fprintf(stderr,
                 "server %lld: %lld pushes, %lld updates, replies held %.2f s in all, mean staleness %.3f, "
                 "per push %.3f ms taking it in and updating, %.3f ms replying\n",
                 static_cast<long long>(index), static_cast<long long>(report.pushes),
                 static_cast<long long>(report.updates), report.held_s,
                 static_cast<double>(report.staleness_sum) / pushes, 1000 * report.update_s / pushes,
                 1000 * report.reply_s / pushes);
  }
}

}  // namespace colo::dist
