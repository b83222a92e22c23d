#include "colo/cli/gpus_command.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "colo/core/colo_python.h"
#include "colo/core/subprocess.h"
#include "colo/core/table.h"
#include "colo/gpu/device.h"
#include "colo/gpu/sampler.h"

namespace colo::cli {
namespace {

std::string fraction_cell(const std::optional<double>& value) {
  return value ? percent(*value, 0) : "-";
}

nlohmann::json device_json(gpu::Device& device) {
  gpu::DeviceSample s = device.sample();
  const gpu::DeviceInfo& info = device.info();
  nlohmann::json j = gpu::sample_to_json(s);
  j.update({{"name", info.name}, {"uuid", info.uuid}, {"mem_free_bytes", s.mem_free_bytes},
            {"mig_enabled", info.mig_enabled}, {"gpm_supported", info.gpm_supported}});
  nlohmann::json processes = nlohmann::json::array();
  for (const auto& p : device.processes()) processes.push_back({{"pid", p.pid}, {"used_mem_bytes", p.used_mem_bytes}});
  j["processes"] = processes;
  nlohmann::json mig = nlohmann::json::array();
  for (const auto& m : info.mig_instances) mig.push_back({{"index", m.index}, {"uuid", m.uuid}, {"mem_total_bytes", m.mem_total_bytes}});
  j["mig_instances"] = mig;
  return j;
}

// Measures GPU `gpu` for colo.estimate (python/colo/device_profile.py, with
// the colo package this colo was built with) and stores its profile.
int run_profile(int gpu) {
  auto devices = gpu::discover_devices();
  if (devices.empty()) {
    std::fprintf(stderr, "colo gpus --profile: no GPU on this machine: a profile is measured on the GPU it is for\n");
    return 2;
  }
  if (gpu < 0 || gpu >= static_cast<int>(devices.size())) {
    std::fprintf(stderr, "colo gpus --profile: no GPU %d (this machine has %zu)\n", gpu, devices.size());
    return 2;
  }
  ChildProcess measure({colo_python_interpreter(), "-m", "colo.device_profile", "--gpu", std::to_string(gpu)},
                       {{"PYTHONPATH", colo_python_path(colo_python_package_dir())}}, "", /*end_with_parent=*/true);
  return exit_code_of(measure.wait());
}

int run_gpus(bool json) {
  auto devices = gpu::discover_devices();
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (auto& device : devices) all.push_back(device_json(*device));
    std::printf("%s\n", all.dump(1).c_str());
    return 0;
  }
  if (devices.empty()) {
    std::printf("no GPU on this machine\n");
    return 0;
  }
  TablePrinter table({{"gpu", 3}, {"name", 24}, {"memory used/total", 21}, {"util", 5}, {"sm", 5},
                      {"power", 7}, {"energy", 12}, {"procs", 5}});
  table.header();
  for (auto& device : devices) {
    gpu::DeviceSample s = device->sample();
    const auto& info = device->info();
    table.row({std::to_string(info.index), info.name.substr(0, 24),
               bytes_human(double(s.mem_used_bytes)) + " / " + bytes_human(double(s.mem_total_bytes)),
               fraction_cell(s.gpu_util), fraction_cell(s.sm_active),
               s.power_w ? fixed(*s.power_w, 0) + " W" : "-",
               s.energy_j ? fixed(*s.energy_j / 1000.0, 1) + " kJ" : "-",
               std::to_string(device->processes().size())});
    for (const auto& mig : info.mig_instances) {
      table.row({"", "  MIG " + std::to_string(mig.index) + " " + mig.uuid.substr(0, 18),
                 bytes_human(double(mig.mem_total_bytes)), "", "", "", "", ""});
    }
  }
  return 0;
}

}  // namespace

void add_gpus_command(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  auto profile = std::make_shared<bool>(false);
  auto gpu = std::make_shared<int>(0);
  CLI::App* cmd = app.add_subcommand("gpus", "List the GPUs: memory, utilisation, SM activity, power, energy");
  cmd->add_flag("--json", *json, "print JSON (one object per GPU, with processes and MIG instances)");
  CLI::Option* profile_flag =
      cmd->add_flag("--profile", *profile,
                    "measure a GPU for colo.estimate (its context, library and cuDNN workspaces) and store the "
                    "profile under its short name, e.g. h200 (docs/python.md)");
  cmd->add_option("--gpu", *gpu, "with --profile: which GPU (default 0)")->needs(profile_flag);
  cmd->callback([json, profile, gpu, &exit_code] { exit_code = *profile ? run_profile(*gpu) : run_gpus(*json); });
}

}  // namespace colo::cli
