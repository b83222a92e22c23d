#pragma once
// GPU memory as Slurm can count it: each GPU's memory cut into shards of a
// fixed size (Slurm's gres/shard), so Slurm's own scheduler packs jobs onto
// a GPU by the memory colo estimated for them. `colo slurm conf` prints the
// configuration lines; `colo slurm submit` asks for shards.

#include <cstdint>
#include <string>
#include <vector>

namespace colo::slurm {

inline constexpr int64_t kDefaultShardBytes = int64_t{1} << 30;  // 1 GiB

// Shards that hold `mem_bytes` (rounded up, at least 1).
int shards_for(int64_t mem_bytes, int64_t shard_bytes);

// The GPUs of one node as Slurm is told of them.
struct NodeGpus {
  std::string node;                        // NodeName
  std::vector<std::string> device_files;   // one per GPU: /dev/nvidia0, ...
  int64_t gpu_mem_bytes = 0;               // memory of each GPU (the smallest, if they differ)
  int cpus = 0;                            // 0: leave CPUs to slurmd's own count
  int64_t real_mem_mib = 0;                // 0: leave out
  std::string address;                     // NodeAddr (how slurmctld reaches slurmd); "": leave out
};

// Shards of one GPU of `node`.
int shards_per_gpu(const NodeGpus& node, int64_t shard_bytes);

// gres.conf lines for `node`: its GPUs by device file, and their shards.
// Throws std::invalid_argument for a node without GPUs or memory.
std::string gres_conf(const NodeGpus& node, int64_t shard_bytes);

// The slurm.conf lines colo needs: GRES types, the consumable-TRES
// selector, and the node line with its address, gpu and shard counts.
std::string slurm_conf_lines(const NodeGpus& node, int64_t shard_bytes);

// The shards of each GPU on the nodes `sinfo -h -o %G` describes (one
// "gpu:2,shard:160(S:0)" line per node group): the smallest per-GPU count
// among nodes that have both; 0 when none has shards.
int shards_per_gpu_from_sinfo(const std::string& sinfo_gres_lines);

}  // namespace colo::slurm
