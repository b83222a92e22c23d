// `colo slurm conf`: the gres.conf and slurm.conf lines that let Slurm pack
// jobs by GPU memory (one shard per --shard of each GPU's memory).

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "colo/cli/slurm_subcommands.h"
#include "colo/core/error.h"
#include "colo/core/units.h"
#include "colo/gpu/device.h"
#include "colo/slurm/gres.h"

namespace colo::cli {
namespace {

struct ConfArgs {
  std::string node;
  int gpus = 0;
  std::string gpu_mem;
  std::string shard = "1GiB";
  std::string device_files = "/dev/nvidia%d";
  int cpus = 0;
};

int64_t size_option(const std::string& text, const char* option) {
  auto bytes = parse_bytes(text);
  if (!bytes || *bytes <= 0) throw InputError(option, "", "a size such as 80GiB, got \"" + text + "\"");
  return *bytes;
}

int print_conf(const ConfArgs& args) {
  slurm::NodeGpus node;
  node.node = args.node;
  if (node.node.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    node.node = host;
  }
  node.cpus = args.cpus;
  int gpus = args.gpus;
  int64_t mem = args.gpu_mem.empty() ? 0 : size_option(args.gpu_mem, "--gpu-mem");
  if (gpus == 0 || mem == 0) {
    auto devices = gpu::discover_devices();
    if (devices.empty()) {
      throw InputError("colo slurm conf", "--gpus/--gpu-mem", "a GPU on this machine, or both options given");
    }
    if (gpus == 0) gpus = static_cast<int>(devices.size());
    if (mem == 0) {
      mem = devices[0]->info().mem_total_bytes;
      for (const auto& d : devices) mem = std::min(mem, d->info().mem_total_bytes);
    }
  }
  if (gpus < 0) throw InputError("--gpus", "", "a count >= 1");
  for (int i = 0; i < gpus; ++i) {
    char file[512];
    std::snprintf(file, sizeof(file), args.device_files.c_str(), i);
    node.device_files.push_back(file);
  }
  node.gpu_mem_bytes = mem;
  int64_t shard = size_option(args.shard, "--shard");
  if (slurm::shards_per_gpu(node, shard) < 1) throw InputError("--shard", "", "a size below one GPU's memory");
  std::printf("# gres.conf (beside slurm.conf on every node)\n%s\n# slurm.conf\n%s",
              slurm::gres_conf(node, shard).c_str(), slurm::slurm_conf_lines(node, shard).c_str());
  std::printf("# colo slurm submit asks for shard:N, N = ceil(estimated GPU memory / %s)\n", args.shard.c_str());
  return 0;
}

}  // namespace

void add_slurm_conf(CLI::App& slurm, int& exit_code) {
  auto args = std::make_shared<ConfArgs>();
  CLI::App* cmd = slurm.add_subcommand("conf", "print the gres.conf and slurm.conf lines for this node's GPUs");
  cmd->add_option("--node", args->node, "NodeName (default: this host's name)");
  cmd->add_option("--gpus", args->gpus, "GPUs of the node (default: those NVML sees)");
  cmd->add_option("--gpu-mem", args->gpu_mem, "memory of each GPU, e.g. 80GiB (default: NVML's)");
  cmd->add_option("--shard", args->shard, "GPU memory per shard")->capture_default_str();
  cmd->add_option("--device-files", args->device_files, "printf pattern of the GPUs' device files")
      ->capture_default_str();
  cmd->add_option("--cpus", args->cpus, "CPUs= of the node line (default: left to slurmd)");
  cmd->callback([args, &exit_code] { exit_code = print_conf(*args); });
}

}  // namespace colo::cli
