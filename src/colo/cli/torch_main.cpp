// colo-torch: every colo command, those that need LibTorch included. The
// thin `colo` (main.cpp) hands it the command lines it does not run itself.

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include "colo/cli/command_line.h"
#include "colo/cli/compare_command.h"
#include "colo/cli/dist_command.h"
#include "colo/cli/estimate_command.h"
#include "colo/cli/loader_command.h"
#include "colo/cli/run_command.h"
#include "colo/cli/slurm_subcommands.h"
#include "colo/cli/submit_command.h"
#include "colo/cli/sweep_command.h"
#include "colo/cli/train_command.h"
#include "colo/core/log.h"

int main(int argc, char** argv) {
  colo::init_logging();
  CLI::App app{colo::cli::kColoAbout};
  app.require_subcommand(1);
  int exit_code = 0;
  colo::cli::add_train_command(app, exit_code);
  colo::cli::add_sweep_command(app, exit_code);
  colo::cli::add_estimate_command(app, exit_code);
  colo::cli::add_dist_command(app, exit_code);
  colo::cli::add_loader_command(app, exit_code);
  colo::cli::add_compare_command(app, exit_code);
  colo::cli::add_run_command(app, exit_code);
  colo::cli::add_replay_command(app, exit_code);
  colo::cli::add_submit_commands(app, exit_code);
  colo::cli::add_commands_without_torch(app, exit_code);
  colo::cli::add_slurm_submit(*app.get_subcommand("slurm"), exit_code);
  return colo::cli::run_command_line(app, argc, argv, exit_code, [](const std::exception& e) {
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    return std::string(torch_error ? torch_error->what_without_backtrace() : e.what());
  });
}
