#pragma once
// `colo slurm conf|submit|exec|status`: colo's memory estimates, OOM
// recovery and energy accounting on a Slurm cluster (docs/slurm.md).

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_slurm_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
