#pragma once
// `colo slurm conf|submit|exec|status`: colo's memory estimates, OOM
// recovery and energy accounting on a Slurm cluster (docs/slurm.md).

#include <CLI/CLI.hpp>

namespace colo::cli {

// Adds `colo slurm` with conf, exec and status, which need no LibTorch, and
// returns it; `submit` (it estimates jobs' memory) is added by
// add_slurm_submit (slurm_subcommands.h) where LibTorch is linked.
CLI::App* add_slurm_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
