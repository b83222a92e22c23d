// Training throughput of one process: N models fused into one array (colo's
// framework-level collocation) or one model trained the ordinary way (what
// each process of the sequential, concurrent and MPS strategies runs).
//
//   fusion_throughput --model lenet --mode fused --models 32 --seconds 3
//   fusion_throughput --model resnet18 --mode single --start-at 1790000000.5
//
// Prints one JSON line: aggregate training samples/s over a timed window,
// allocator peak, and with --sample the GPU's mean SM activity and energy
// over that window (NVML).

#include <chrono>
#include <cstdio>
#include <thread>

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "colo/core/stopwatch.h"
#include "colo/data/dataset_registry.h"
#include "colo/data/loader.h"
#include "colo/fuse/array_trainer.h"
#include "colo/gpu/device.h"
#include "colo/gpu/energy.h"
#include "colo/gpu/sampler.h"
#include "colo/gpu/torch_device.h"
#include "colo/models/model_registry.h"
#include "colo/train/loader_options.h"

namespace {

using colo::train::TrainSpec;

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TrainSpec bench_spec(const std::string& model, int64_t batch, const std::string& device,
                     const std::string& data_path) {
  TrainSpec spec;
  spec.source = "fusion_throughput";
  spec.batch_size = batch;
  spec.device = device;
  spec.epochs = 1000;
  spec.data.on_device = device != "cpu";
  spec.data.prefetch = 0;
  spec.data.pin_memory = false;
  if (model == "resnet18") {
    spec.model.name = "resnet";
    spec.model.depth = 18;
    spec.data.name = "synthetic";
    spec.data.shape = {3, 32, 32};
    spec.data.train_size = 8192;
    spec.data.test_size = 256;
  } else {
    spec.model.name = model;
    spec.data.name = "fashion-mnist";
    spec.data.path = data_path.empty() ? "/usr/share/datasets/fashion-mnist" : data_path;
  }
  spec.optimizer.name = "sgd";
  spec.optimizer.lr = 0.01;
  spec.optimizer.momentum = 0.9;
  return spec;
}

// The ordinary single-model step of colo's Trainer, without metrics.
struct SingleModel {
  colo::models::ClassifierPtr model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<colo::data::DataLoader> loader;
  int64_t epoch = 0;

  void step() {
    auto batch = loader->next();
    if (!batch) {
      loader->start_epoch(++epoch);
      batch = loader->next();
    }
    at::Tensor loss = at::cross_entropy_loss(model->forward(batch->inputs), batch->labels);
    optimizer->zero_grad();
    loss.backward();
    optimizer->step();
  }
};

}  // namespace

int run(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusion_throughput: error: %s\n", e.what());
    return 1;
  }
}

int run(int argc, char** argv) {
  CLI::App app{"training throughput of fused arrays and single models"};
  std::string model = "lenet", mode = "fused", device_name = "cuda", data_path;
  int64_t models = 1, batch = 128, warmup = 30;
  double seconds = 3.0, start_at = 0;
  bool graph = true, sample = false, channels_last = false, bf16 = false, own_kernels = true;
  app.add_option("--model", model, "mlp | lenet | resnet18")->check(CLI::IsMember({"mlp", "lenet", "resnet18"}));
  app.add_option("--mode", mode, "fused | single")->check(CLI::IsMember({"fused", "single"}));
  app.add_option("--models", models, "models in the fused array")->check(CLI::Range(1, 1024));
  app.add_option("--batch", batch, "batch per model");
  app.add_option("--seconds", seconds, "length of the timed window");
  app.add_option("--warmup-steps", warmup, "steps before the window");
  app.add_option("--start-at", start_at, "unix time at which the window opens (aligns processes)");
  app.add_option("--device", device_name, "cuda | cpu");
  app.add_option("--data", data_path, "Fashion-MNIST directory");
  app.add_flag("!--no-graph", graph, "fused: run the step eagerly instead of as a CUDA graph");
  app.add_flag("--channels-last", channels_last, "fused: NHWC convolutions");
  app.add_flag("--bf16", bf16, "fused: forward passes under bfloat16 autocast");
  app.add_flag("!--aten-kernels", own_kernels,
               "fused: cuDNN/ATen instead of colo's CUDA kernels for small-group convolutions and ReLU + max pooling");
  app.add_flag("--sample", sample, "sample the GPU (SM activity, energy) over the window");
  CLI11_PARSE(app, argc, argv);

  c10::Device device(device_name == "cpu" ? c10::kCPU : c10::kCUDA, device_name == "cpu" ? -1 : 0);
  TrainSpec base = bench_spec(model, batch, device_name, data_path);
  colo::data::Dataset dataset = colo::data::load_dataset(base.data);

  std::function<void(int64_t)> run_steps;
  std::unique_ptr<colo::fuse::ArrayTrainer> array;
  SingleModel single;
  if (mode == "fused") {
    std::vector<TrainSpec> specs;
    for (int64_t i = 0; i < models; ++i) {
      TrainSpec spec = base;
      spec.seed = static_cast<uint64_t>(i);
      spec.optimizer.lr = 0.01 * (1.0 + 0.1 * static_cast<double>(i));
      specs.push_back(spec);
    }
    colo::fuse::ArrayOptions options;
    options.cuda_graph = graph;
    options.channels_last = channels_last;
    options.bf16_autocast = bf16;
    options.own_cuda_kernels = own_kernels;
    array = std::make_unique<colo::fuse::ArrayTrainer>(specs, dataset, device, options);
    run_steps = [&](int64_t steps) { array->train_steps(steps); };
  } else {
    models = 1;
    if (device.is_cuda()) at::globalContext().setBenchmarkCuDNN(true);
    single.model = colo::models::build_model(base.model, dataset.shape);
    single.model->to(device);
    single.optimizer = colo::train::make_optimizer(base.optimizer, single.model->parameters());
    single.loader = std::make_unique<colo::data::DataLoader>(
        dataset.train, colo::train::loader_options(base, dataset, device, true));
    single.loader->start_epoch(0);
    run_steps = [&](int64_t steps) {
      for (int64_t s = 0; s < steps; ++s) single.step();
      colo::gpu::synchronize(device);
    };
  }

  run_steps(warmup);
  // Steps per timed chunk: each chunk ends in a synchronisation, which idles
  // the GPU while the host queues the next one; chunks of about 0.1 s keep
  // that idle time out of the figure, as in a training loop.
  colo::Stopwatch probe_clock;
  run_steps(10);
  const double step_s = probe_clock.elapsed_s() / 10;
  const int64_t chunk = std::max<int64_t>(10, static_cast<int64_t>(0.1 / std::max(step_s, 1e-6)));
  if (start_at > 0) {
    double wait = start_at - unix_now_s();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  std::unique_ptr<colo::gpu::Sampler> sampler;
  if (sample && device.is_cuda()) {
    auto devices = colo::gpu::discover_devices();
    if (!devices.empty()) {
      colo::gpu::SamplerOptions options;
      options.interval_s = 0.1;
      sampler = std::make_unique<colo::gpu::Sampler>(std::vector<colo::gpu::DevicePtr>{devices[0]}, options);
      sampler->start();
    }
  }
  colo::gpu::reset_peak_memory(device);
  double window_start_unix = unix_now_s();
  double t0 = steady_now_s();
  colo::Stopwatch clock;
  int64_t steps = 0;
  while (clock.elapsed_s() < seconds) {
    run_steps(chunk);
    steps += chunk;
  }
  double elapsed = clock.elapsed_s();
  double t1 = steady_now_s();

  nlohmann::json out;
  out["model"] = model;
  out["mode"] = mode;
  out["models"] = models;
  out["batch"] = batch;
  out["steps"] = steps;
  out["steps_per_chunk"] = chunk;
  out["seconds"] = elapsed;
  out["window_start_unix"] = window_start_unix;
  out["samples_per_s"] = static_cast<double>(steps * batch * models) / elapsed;
  if (auto peak = colo::gpu::peak_memory_bytes(device)) out["peak_alloc_bytes"] = *peak;
  if (auto reserved = colo::gpu::peak_reserved_bytes(device)) out["peak_reserved_bytes"] = *reserved;
  if (array) {
    out["cuda_graph"] = array->graphed();
    out["channels_last"] = channels_last;
    out["bf16_autocast"] = bf16;
    out["own_kernels"] = own_kernels;
    if (!array->graph_error().empty()) out["graph_error"] = array->graph_error();
  }
  if (sampler) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    sampler->stop();
    auto samples = sampler->samples(0);
    double sm = 0, util = 0;
    int n_sm = 0, n_util = 0;
    for (const auto& s : samples) {
      if (s.time_s < t0 || s.time_s > t1) continue;
      if (s.sm_active) { sm += *s.sm_active; ++n_sm; }
      if (s.gpu_util) { util += *s.gpu_util; ++n_util; }
    }
    if (n_sm > 0) out["sm_active"] = sm / n_sm;
    if (n_util > 0) out["gpu_util"] = util / n_util;
    auto energy = colo::gpu::energy_between(samples, t0, t1);
    out["energy_j"] = energy.energy_j;
    out["window_s"] = t1 - t0;
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
