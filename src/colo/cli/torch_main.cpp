// colo-torch: every colo command, those that need LibTorch included. The
// thin `colo` (main.cpp) hands it the command lines it does not run itself.

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include "colo/cli/command_line.h"
#include "colo/cli/compare_command.h"
#include "colo/cli/dist_command.h"
#include "colo/cli/estimate_command.h"
#include "colo/cli/gpus_command.h"
#include "colo/cli/job_commands.h"
#include "colo/cli/loader_command.h"
#include "colo/cli/monitor_command.h"
#include "colo/cli/mps_command.h"
#include "colo/cli/run_command.h"
#include "colo/cli/simulate_command.h"
#include "colo/cli/slurm_command.h"
#include "colo/cli/slurm_subcommands.h"
#include "colo/cli/submit_command.h"
#include "colo/cli/sweep_command.h"
#include "colo/cli/train_command.h"
#include "colo/core/log.h"

int main(int argc, char** argv) {
  colo::init_logging();
  CLI::App app{"colo: pack many neural-network training runs onto GPUs"};
  app.require_subcommand(1);
  int exit_code = 0;
  colo::cli::add_train_command(app, exit_code);
  colo::cli::add_sweep_command(app, exit_code);
  colo::cli::add_estimate_command(app, exit_code);
  colo::cli::add_dist_command(app, exit_code);
  colo::cli::add_gpus_command(app, exit_code);
  colo::cli::add_loader_command(app, exit_code);
  colo::cli::add_compare_command(app, exit_code);
  colo::cli::add_monitor_command(app, exit_code);
  colo::cli::add_mps_command(app, exit_code);
  colo::cli::add_simulate_command(app, exit_code);
  colo::cli::add_trace_command(app, exit_code);
  colo::cli::add_report_command(app, exit_code);
  colo::cli::add_run_command(app, exit_code);
  colo::cli::add_queue_command(app, exit_code);
  colo::cli::add_replay_command(app, exit_code);
  colo::cli::add_history_command(app, exit_code);
  colo::cli::add_submit_commands(app, exit_code);
  colo::cli::add_job_commands(app, exit_code);
  colo::cli::add_slurm_submit(*colo::cli::add_slurm_command(app, exit_code), exit_code);
  return colo::cli::run_command_line(app, argc, argv, exit_code, [](const std::exception& e) {
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    return std::string(torch_error ? torch_error->what_without_backtrace() : e.what());
  });
}
