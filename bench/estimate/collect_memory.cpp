// Measures the peak GPU memory of randomly drawn colo training jobs (MLP,
// CNN, transformer) and writes one CSV row per job with its configuration,
// the GPU, the PyTorch version, the caching allocator's peaks, the CUDA
// context and (every --probe-every rows) the probe estimator's answer.
//
//   collect_memory --out rows.csv --start 0 --rows 600 --seed 1
//   collect_memory --context-only mlp     # prints the context of a fresh process
//   collect_memory --trace-rows 2303 549 --trace-dir traces   # allocator event traces

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include "colo/core/files.h"
#include "colo/core/paths.h"
#include "colo/estimate/probe_estimator.h"
#include "colo/gpu/torch_device.h"
#include "colo/train/train_spec.h"
#include "colo/train/trainer.h"
#include "allocator_trace.h"
#include "memory_config.h"

namespace {

using colo::bench::MemoryConfig;

struct Measured {
  int64_t reserved = 0, allocated = 0, context = -1;
};

Measured measure(const MemoryConfig& config, const std::string& dir, colo::train::TrainSpec* spec_out) {
  std::string spec_path = dir + "/job.toml";
  colo::write_file_atomically(spec_path, config.to_toml(dir + "/run"));
  colo::train::TrainSpec spec = colo::train::parse_train_spec(spec_path);
  c10::Device cuda(c10::DeviceType::CUDA, 0);
  colo::gpu::release_cached_memory(cuda);
  Measured m;
  {
    colo::train::Trainer trainer(spec);
    auto records = trainer.run(false);
    m.reserved = records.back().peak_reserved_bytes.value_or(0);
    m.allocated = records.back().peak_mem_bytes.value_or(0);
    m.context = colo::estimate::measured_context_bytes(0).value_or(-1);
  }
  colo::gpu::release_cached_memory(cuda);
  *spec_out = spec;
  return m;
}

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measure the peak GPU memory of random colo training jobs"};
  std::string out, context_only, work = colo::temp_directory();
  int64_t start = 0, rows = 100, probe_every = 4;
  uint64_t seed = 1;
  int threads = 4;
  double time_limit = 0;
  app.add_option("--out", out, "CSV file (appended; header written when new)");
  app.add_option("--start", start, "first row index");
  app.add_option("--rows", rows, "rows to measure");
  app.add_option("--seed", seed, "data set seed");
  app.add_option("--probe-every", probe_every, "run the probe estimator on rows divisible by this (0: never)");
  app.add_option("--threads", threads, "CPU threads for LibTorch");
  app.add_option("--time-limit", time_limit, "stop after this many seconds (0: none)");
  app.add_option("--context-only", context_only, "print the CUDA context after one small job of this model");
  int64_t print_spec = -1;
  app.add_option("--print-spec", print_spec, "print row N's training spec and exit");
  std::vector<int64_t> trace_rows;
  std::string trace_dir;
  app.add_option("--trace-rows", trace_rows, "record the allocator's event trace of these rows and exit");
  app.add_option("--trace-dir", trace_dir, "folder for the traces (row-N.csv)");
  CLI11_PARSE(app, argc, argv);
  if (print_spec >= 0) {
    std::cout << colo::bench::draw_memory_config(seed, print_spec).to_toml("runs/memory-row");
    return 0;
  }
  at::set_num_threads(threads);
  if (colo::gpu::cuda_device_count() == 0) {
    std::cerr << "collect_memory: no CUDA device; peaks can only be measured on a GPU\n";
    return 1;
  }
  std::string gpu = colo::gpu::describe_device(c10::Device(c10::DeviceType::CUDA, 0));
  std::string dir = work + "/colo-collect-" + std::to_string(getpid());
  colo::make_directories(dir);

  if (!trace_rows.empty()) {
    if (trace_dir.empty()) {
      std::cerr << "collect_memory: --trace-rows needs --trace-dir\n";
      return 1;
    }
    colo::make_directories(trace_dir);
    for (int64_t row : trace_rows) {
      MemoryConfig config = colo::bench::draw_memory_config(seed, row);
      colo::train::TrainSpec spec;
      colo::bench::start_allocator_trace();
      Measured m = measure(config, dir, &spec);
      std::string path = trace_dir + "/row-" + std::to_string(row) + ".csv";
      long events = colo::bench::write_allocator_trace(path);
      std::printf("{\"row\": %lld, \"model\": \"%s\", \"measured_reserved\": %lld, \"measured_allocated\": %lld, "
                  "\"events\": %ld, \"trace\": \"%s\"}\n",
                  static_cast<long long>(row), config.model.c_str(), static_cast<long long>(m.reserved),
                  static_cast<long long>(m.allocated), events, path.c_str());
    }
    colo::remove_tree(dir);
    return 0;
  }

  if (!context_only.empty()) {
    MemoryConfig c = colo::bench::draw_memory_config(seed, 0);
    c.model = context_only;
    c.widths = {256};
    c.depth = 18, c.width = 0.25, c.layers = 1, c.d_model = 64, c.heads = 4, c.ff_dim = 0;
    c.shape = {3, 32, 32}, c.patch_size = 4, c.batch_size = 32;
    colo::train::TrainSpec spec;
    Measured m = measure(c, dir, &spec);
    std::printf("{\"model\": \"%s\", \"context_bytes\": %lld, \"gpu\": \"%s\", \"torch\": \"%s\"}\n",
                context_only.c_str(), static_cast<long long>(m.context), gpu.c_str(), torch_version().c_str());
    colo::remove_tree(dir);
    return 0;
  }

  bool fresh = !colo::is_regular_file(out);
  std::ofstream csv(out, std::ios::app);
  if (!csv) {
    std::cerr << "collect_memory: cannot write " << out << "\n";
    return 1;
  }
  if (fresh) {
    for (const auto& h : MemoryConfig::csv_header()) csv << h << ",";
    csv << "gpu,torch,measured_reserved,measured_allocated,context_bytes,probe_reserved,seconds\n";
  }
  colo::estimate::ProbeEstimator probe("cuda");
  auto begin = std::chrono::steady_clock::now();
  int64_t failed = 0, written = 0;
  for (int64_t row = start; row < start + rows; ++row) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (time_limit > 0 && elapsed > time_limit) {
      std::cerr << "collect_memory: time limit reached after " << written << " rows\n";
      break;
    }
    MemoryConfig config = colo::bench::draw_memory_config(seed, row);
    auto t0 = std::chrono::steady_clock::now();
    Measured m;
    colo::train::TrainSpec spec;
    std::string probe_text;
    try {
      m = measure(config, dir, &spec);
      if (probe_every > 0 && row % probe_every == 0) {
        colo::estimate::EstimateRequest request;
        request.spec = spec;
        auto e = probe.estimate(request);
        if (e.known) probe_text = std::to_string(e.breakdown->activations);
      }
    } catch (const std::exception& e) {
      ++failed;
      std::string what = e.what();
      std::cerr << "row " << row << " (" << config.model << ", batch " << config.batch_size
                << "): " << what.substr(0, what.find('\n')) << "\n";
      colo::gpu::release_cached_memory(c10::Device(c10::DeviceType::CUDA, 0));
      continue;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& v : config.csv_values()) csv << v << ",";
    csv << gpu << "," << torch_version() << "," << m.reserved << "," << m.allocated << "," << m.context
        << "," << probe_text << "," << seconds << "\n";
    csv.flush();
    ++written;
    if (written % 50 == 0) {
      std::cerr << "collect_memory: " << written << " rows (last " << config.model << " "
                << m.reserved / (1 << 20) << " MiB in " << seconds << " s)\n";
    }
  }
  std::cerr << "collect_memory: wrote " << written << " rows, " << failed << " failed\n";
  colo::remove_tree(dir);
  return 0;
}
