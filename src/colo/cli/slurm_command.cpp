#include "colo/cli/slurm_command.h"

#include "colo/cli/slurm_subcommands.h"

namespace colo::cli {

CLI::App* add_slurm_command(CLI::App& app, int& exit_code) {
  CLI::App* slurm = app.add_subcommand("slurm", "run colo jobs on a Slurm cluster, packed by GPU memory");
  slurm->require_subcommand(1);
  add_slurm_conf(*slurm, exit_code);
  add_slurm_exec(*slurm, exit_code);
  add_slurm_status(*slurm, exit_code);
  return slurm;
}

}  // namespace colo::cli
