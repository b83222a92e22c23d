#pragma once
// The name a job gets from its command when its user gives none.

#include <string>
#include <vector>

namespace colo::sched {

// A job's default name from its argv (`colo submit -- ARGV`, a job file's
// command). A command run through an interpreter or launcher is named after
// what it runs, not after the launcher:
//   python, python3, python3.X   its script (`-m MODULE`: the module)
//   bash, sh, zsh                its script (`-c STRING`: the string, first 40 characters)
//   torchrun                     its training script (`-m`/`--module`: the module)
//   env, nice, taskset, srun     the command they run, named by these rules in turn
//                                (env skips NAME=value; taskset its mask or CPU list)
// A script or command is named by its base name without its extension
// (`/home/u/train.py` -> `train`); the options of each launcher that take a
// value are skipped with it (`srun -n 4`, `torchrun --nproc_per_node 2`).
// Any other command, or a launcher given nothing to run (`python3 -c CODE`),
// is named by argv[0] as written. "" for an empty argv. Never throws.
std::string default_job_name(const std::vector<std::string>& argv);

}  // namespace colo::sched
