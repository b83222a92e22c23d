#pragma once
// A whole one-node Slurm in one directory, for a machine that has none:
// slurm.conf (with colo's shard lines), gres.conf, a munge key, and
// stand-ins for GPU device files the machine lacks. `colo slurm conf
// --standalone DIR` writes it; tests/slurm/slurm_cluster.sh starts colo's
// test cluster from it.

#include <cstdint>
#include <string>
#include <vector>

#include "colo/slurm/gres.h"

namespace colo::slurm {

struct StandaloneSetup {
  std::string dir;                      // absolute; every file of the set-up is inside it
  NodeGpus node;                        // its device_files include the stand-ins
  int64_t shard_bytes = kDefaultShardBytes;
  std::vector<std::string> stand_ins;   // device files to create as links to /dev/null
  int slurmctld_port = 0;
  int slurmd_port = 0;
};

// The set-up of `node` in `dir` (made absolute): every device file of the
// node that does not exist on this machine becomes a stand-in,
// DIR/dev/nvidiaN (Slurm only checks that the file is there); slurmctld
// reaches slurmd on 127.0.0.1. Throws InputError naming DIR when it is a
// path Slurm's files cannot name (spaces, '#', '=').
StandaloneSetup plan_standalone(const std::string& dir, NodeGpus node, int64_t shard_bytes, int slurmctld_port,
                                int slurmd_port);

// One line saying what the set-up is for (node, GPUs and their device files,
// memory, shard, CPUs), its ports and key left out: a directory holding a
// set-up of the same signature holds this one. Written as slurm.conf's
// first line, after "# colo slurm conf --standalone: ".
std::string standalone_signature(const StandaloneSetup& setup);

// The whole slurm.conf: the signature line, the daemons' ports, munge
// authentication through DIR/munge/sock, state, spool, pid and log files in
// DIR, process tracking without cgroups, no accounting database, then
// slurm_conf_lines and one partition, "gpu", holding the node.
std::string standalone_slurm_conf(const StandaloneSetup& setup);

// The two commands that start the set-up, as root: munged on DIR's key and
// socket (forced past folders others may not enter); then slurmctld and
// slurmd, each with SLURM_CONF=DIR/slurm.conf.
// Paths are shell-quoted; each line runs as it is under /bin/sh.
std::vector<std::string> standalone_start_commands(const StandaloneSetup& setup);

// Writes the set-up into its directory (created if missing): slurm.conf,
// gres.conf (beside it, where Slurm looks), munge/munge.key (128 random
// bytes, mode 0600), the stand-ins, and the state, spool and log folders.
// Returns false, writing nothing, when DIR already holds a set-up of the
// same signature (its ports and key stay). Throws InputError naming DIR when
// it holds another set-up, holds files of anything else, or cannot be
// written (with the system's reason).
bool write_standalone(const StandaloneSetup& setup);

}  // namespace colo::slurm
