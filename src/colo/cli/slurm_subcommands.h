#pragma once
// The subcommands of `colo slurm`, one file each; slurm_command.cpp adds them.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_slurm_conf(CLI::App& slurm, int& exit_code);
void add_slurm_submit(CLI::App& slurm, int& exit_code);
void add_slurm_exec(CLI::App& slurm, int& exit_code);
void add_slurm_status(CLI::App& slurm, int& exit_code);

}  // namespace colo::cli
