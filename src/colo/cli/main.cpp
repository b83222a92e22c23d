// The colo command: one subcommand per file in this folder.

#include <cstdio>

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include "colo/cli/compare_command.h"
#include "colo/cli/gpus_command.h"
#include "colo/cli/loader_command.h"
#include "colo/cli/monitor_command.h"
#include "colo/cli/mps_command.h"
#include "colo/cli/run_command.h"
#include "colo/cli/simulate_command.h"
#include "colo/cli/slurm_command.h"
#include "colo/cli/submit_command.h"
#include "colo/cli/dist_command.h"
#include "colo/cli/estimate_command.h"
#include "colo/cli/sweep_command.h"
#include "colo/cli/train_command.h"
#include "colo/core/error.h"
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
  colo::cli::add_slurm_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e);
    return status == 0 ? 0 : colo::kExitBadInput;
  } catch (const colo::InputError& e) {
    std::fprintf(stderr, "colo: error: %s\n", e.what());
    return colo::kExitBadInput;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "colo: error: %s\n", e.what());
    return colo::kExitBadInput;
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "colo: error: %s\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "colo: error: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
