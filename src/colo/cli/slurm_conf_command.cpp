// `colo slurm conf`: the gres.conf and slurm.conf lines that let Slurm pack
// jobs by GPU memory (one shard per --shard of each GPU's memory); with
// --standalone DIR, a whole one-node Slurm written into DIR.

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "colo/cli/slurm_subcommands.h"
#include "colo/core/error.h"
#include "colo/core/units.h"
#include "colo/gpu/device.h"
#include "colo/core/shell_words.h"
#include "colo/core/table.h"
#include "colo/core/tcp_port.h"
#include "colo/slurm/gres.h"
#include "colo/slurm/standalone.h"

namespace colo::cli {
namespace {

struct ConfArgs {
  std::string node;
  int gpus = 0;
  std::string gpu_mem;
  std::string shard = "1GiB";
  std::string device_files = "/dev/nvidia%d";
  int cpus = 0;
  std::string standalone;  // DIR, or "" to print the lines
};

int64_t size_option(const std::string& text, const char* option) {
  auto bytes = parse_bytes(text);
  if (!bytes || *bytes <= 0) throw InputError(option, "", "a size such as 80GiB, got \"" + text + "\"");
  return *bytes;
}

// The node the options describe; GPUs NVML sees where they leave them out.
slurm::NodeGpus node_of(const ConfArgs& args) {
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
  return node;
}

int64_t shard_of(const ConfArgs& args, const slurm::NodeGpus& node) {
  int64_t shard = size_option(args.shard, "--shard");
  if (slurm::shards_per_gpu(node, shard) < 1) throw InputError("--shard", "", "a size below one GPU's memory");
  return shard;
}

int write_standalone(ConfArgs args) {
  if (args.cpus == 0) args.cpus = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  slurm::NodeGpus node = node_of(args);
  int64_t shard = shard_of(args, node);
  int ctld_port = free_tcp_port(), slurmd_port = free_tcp_port();
  while (slurmd_port == ctld_port) slurmd_port = free_tcp_port();
  slurm::StandaloneSetup setup = slurm::plan_standalone(args.standalone, node, shard, ctld_port, slurmd_port);
  bool written = slurm::write_standalone(setup);
  const std::string& dir = setup.dir;
  if (written) {
    std::printf("# wrote a one-node Slurm into %s: slurm.conf, gres.conf, munge/munge.key", dir.c_str());
    if (!setup.stand_ins.empty()) std::printf(", %zu stand-in GPU device file(s) in dev/", setup.stand_ins.size());
    std::printf("\n");
  } else {
    std::printf("# %s already holds this set-up: nothing written\n", dir.c_str());
  }
  std::printf("# node %s: %zu GPU(s) of %s, %d shards each, %d CPUs\n", setup.node.node.c_str(),
              setup.node.device_files.size(), bytes_human(static_cast<double>(setup.node.gpu_mem_bytes)).c_str(),
              slurm::shards_per_gpu(setup.node, shard), setup.node.cpus);
  if (::geteuid() != 0) std::printf("# the daemons run as root: sudo chown -R root %s first\n", shell_quote(dir).c_str());
  std::printf("# start it, as root:\n");
  for (const auto& command : slurm::standalone_start_commands(setup)) std::printf("%s\n", command.c_str());
  std::printf("# then, where jobs are submitted: export SLURM_CONF=%s\n", shell_quote(dir + "/slurm.conf").c_str());
  std::printf("# stop it: kill $(cat %s %s %s)\n", shell_quote(dir + "/slurmd.pid").c_str(),
              shell_quote(dir + "/slurmctld.pid").c_str(), shell_quote(dir + "/munge/pid").c_str());
  return 0;
}

int print_conf(const ConfArgs& args) {
  if (!args.standalone.empty()) return write_standalone(args);
  slurm::NodeGpus node = node_of(args);
  int64_t shard = shard_of(args, node);
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
  cmd->add_option("--cpus", args->cpus,
                  "CPUs= of the node line (default: left to slurmd; with --standalone, this machine's)");
  cmd->add_option("--standalone", args->standalone,
                  "write a whole one-node Slurm into DIR (slurm.conf, gres.conf, munge key, stand-ins for "
                  "missing GPU device files) and print the commands that start it");
  cmd->callback([args, &exit_code] { exit_code = print_conf(*args); });
}

}  // namespace colo::cli
