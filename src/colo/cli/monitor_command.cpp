#include "colo/cli/monitor_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "colo/core/error.h"
#include "colo/core/interrupt_cleanup.h"
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/core/subprocess.h"
#include "colo/core/table.h"
#include "colo/data/loader_sampler.h"
#include "colo/gpu/energy.h"
#include "colo/gpu/sampler.h"

namespace colo::cli {
namespace {

struct MonitorArgs {
  double interval_s = 1.0;
  std::string out;
  std::string summary_json;
  double duration_s = 0;
  std::vector<std::string> command;
  std::vector<std::string> loaders;  // shared-loader producer addresses
};

// `<out>` without its extension, plus ".loaders.jsonl".
std::string loader_samples_path(const std::string& out) {
  auto dot = out.find_last_of('.');
  auto slash = out.find_last_of('/');
  std::string stem = dot != std::string::npos && (slash == std::string::npos || dot > slash) ? out.substr(0, dot) : out;
  return stem + ".loaders.jsonl";
}

void print_loaders(const nlohmann::json& loaders) {
  for (const auto& l : loaders) {
    if (!l.contains("samples_per_s")) {
      std::printf("loader %s: %d answer(s), %d unanswered\n", l["address"].get<std::string>().c_str(),
                  l["answers"].get<int>(), l["unanswered"].get<int>());
      continue;
    }
    std::printf("loader %s: %.0f samples/s, %.3f core-ms/sample, buffer depth %.1f (min %.0f), %lld consumer(s) at most\n",
                l["address"].get<std::string>().c_str(), l["samples_per_s"].get<double>(),
                1000 * l["cpu_core_s_per_sample"].get<double>(), l["buffer_depth_mean"].get<double>(),
                l["buffer_depth_min"].get<double>(), static_cast<long long>(l["consumers_max"].get<int64_t>()));
    for (const auto& c : l["consumer_stats"]) {
      if (!c.contains("samples_per_s")) continue;
      // Skipped: chunks it lost behind faster consumers (pace fastest).
      std::printf("  consumer %lld: %.0f samples/s, waiting %.1f%% of its time, %lld chunk(s) skipped\n",
                  static_cast<long long>(c["consumer"].get<int64_t>()), c["samples_per_s"].get<double>(),
                  c["wait_pct"].get<double>(), static_cast<long long>(c.value("chunks_skipped", int64_t{0})));
    }
  }
}

double mean_of(const std::vector<gpu::DeviceSample>& samples,
               std::optional<double> gpu::DeviceSample::*field) {
  double sum = 0;
  int count = 0;
  for (const auto& s : samples) {
    if (s.*field) {
      sum += *(s.*field);
      ++count;
    }
  }
  return count > 0 ? sum / count : -1;
}

nlohmann::json summarise(const gpu::Device& device, const std::vector<gpu::DeviceSample>& samples) {
  nlohmann::json j = {{"index", device.info().index}, {"name", device.info().name},
                      {"samples", samples.size()}};
  if (samples.size() < 2) return j;
  double mem_sum = 0;
  int64_t mem_peak = 0;
  for (const auto& s : samples) {
    mem_sum += double(s.mem_used_bytes);
    mem_peak = std::max(mem_peak, s.mem_used_bytes);
  }
  j["duration_s"] = samples.back().time_s - samples.front().time_s;
  j["mem_used_mean_bytes"] = mem_sum / double(samples.size());
  j["mem_used_peak_bytes"] = mem_peak;
  j["sm_active_mean"] = mean_of(samples, &gpu::DeviceSample::sm_active);
  j["gpu_util_mean"] = mean_of(samples, &gpu::DeviceSample::gpu_util);
  j["power_mean_w"] = mean_of(samples, &gpu::DeviceSample::power_w);
  auto counter = gpu::energy_between(samples, samples.front().time_s, samples.back().time_s);
  j["energy_j"] = counter.energy_j;
  j["energy_from_counter"] = counter.from_counter;
  j["energy_integrated_power_j"] = gpu::integrate_power_j(samples);
  return j;
}

int run_monitor(const MonitorArgs& args) {
  if (args.interval_s < 0.1) throw InputError("--interval", "", "expected at least 0.1 s");
  if (args.command.empty() && args.duration_s <= 0) {
    throw InputError("colo monitor", "", "expected a command after -- or --duration S");
  }
  data::LoaderSampler loaders(args.loaders, args.interval_s, args.out.empty() ? "" : loader_samples_path(args.out));
  auto devices = gpu::discover_devices();
  if (devices.empty()) std::fprintf(stderr, "colo monitor: no GPU; only timing the command\n");
  gpu::Sampler sampler(devices, {args.interval_s, 1 << 20, args.out});
  Stopwatch wall;
  sampler.start();
  loaders.start();
  int status = 0;
  if (!args.command.empty()) {
    ChildProcess child(args.command, {});
    int cleanup = add_interrupt_cleanup([&child] { child.terminate(5.0); });
    status = exit_code_of(child.wait());
    remove_interrupt_cleanup(cleanup);
  } else {
    std::this_thread::sleep_for(std::chrono::duration<double>(args.duration_s));
  }
  sampler.stop();
  loaders.stop();
  double wall_s = wall.elapsed_s();

  nlohmann::json summary = {{"wall_s", wall_s}, {"exit_code", status}, {"interval_s", args.interval_s},
                            {"sampler_cpu_s", sampler.thread_cpu_s()},
                            {"sampler_core_fraction", sampler.thread_cpu_s() / std::max(wall_s, 1e-9)},
                            {"devices", nlohmann::json::array()}};
  if (!args.loaders.empty()) summary["loaders"] = loaders.summary();
  TablePrinter table({{"gpu", 3}, {"duration_s", 10}, {"mem_mean", 10}, {"mem_peak", 10},
                      {"sm_active", 9}, {"power_w", 7}, {"energy_j", 10}});
  table.header();
  for (size_t i = 0; i < devices.size(); ++i) {
    nlohmann::json d = summarise(*devices[i], sampler.samples(i));
    summary["devices"].push_back(d);
    if (!d.contains("duration_s")) continue;
    double sm = d["sm_active_mean"].get<double>();
    if (sm < 0) sm = d["gpu_util_mean"].get<double>();
    table.row({std::to_string(i), fixed(d["duration_s"].get<double>(), 1),
               bytes_human(d["mem_used_mean_bytes"].get<double>()),
               bytes_human(d["mem_used_peak_bytes"].get<double>()), sm < 0 ? "-" : percent(sm),
               fixed(d["power_mean_w"].get<double>(), 1), fixed(d["energy_j"].get<double>(), 1)});
  }
  if (!args.loaders.empty()) print_loaders(summary["loaders"]);
  std::printf("wall %.1f s, exit %d, sampler %.3f%% of a core\n", wall_s, status,
              100.0 * summary["sampler_core_fraction"].get<double>());
  if (!args.summary_json.empty()) write_file_atomically(args.summary_json, summary.dump(1) + "\n");
  return status;
}

}  // namespace

void add_monitor_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MonitorArgs>();
  CLI::App* cmd = app.add_subcommand(
      "monitor", "Sample the GPUs while a command runs (or for --duration), then print a summary");
  cmd->add_option("--interval", args->interval_s, "seconds between samples (>= 0.1)")->capture_default_str();
  cmd->add_option("--out", args->out, "write every sample to this file (.csv, else JSON Lines)");
  cmd->add_option("--summary-json", args->summary_json, "write the summary as JSON to this file");
  cmd->add_option("--loader", args->loaders,
                  "also sample this shared-loader producer (ipc://... or tcp://...; repeatable): its throughput, "
                  "CPU per sample, buffer depth, and each consumer's samples/s and data wait")
      ->allow_extra_args(false);
  cmd->add_option("--duration", args->duration_s, "sample this long when no command is given");
  cmd->add_option("command", args->command, "command to run (after --)");
  cmd->footer("\nSummary per GPU: duration, mean/peak memory, mean SM activity (GPM; else utilisation),\n"
              "mean power, and energy from the total-energy counter (integrated power where missing).\n"
              "Exit status: the command's.");
  cmd->callback([args, &exit_code] { exit_code = run_monitor(*args); });
}

}  // namespace colo::cli
