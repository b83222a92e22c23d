// The colo command. The commands that need no LibTorch run here, so that
// they start at once; every other command line (and --help) goes to
// colo-torch beside this program, which runs them all (torch_main.cpp), by
// exec: the same process, its signals and its exit status.

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include <CLI/CLI.hpp>

#include "colo/cli/command_line.h"
#include "colo/cli/gpus_command.h"
#include "colo/cli/job_commands.h"
#include "colo/cli/monitor_command.h"
#include "colo/cli/mps_command.h"
#include "colo/cli/run_command.h"
#include "colo/cli/simulate_command.h"
#include "colo/cli/slurm_command.h"
#include "colo/core/log.h"
#include "colo/core/paths.h"

namespace {

// Whether the command line names a command added below.
bool runs_here(int argc, char** argv) {
  static const std::set<std::string> commands{"gpus",  "monitor", "mps",  "simulate", "trace", "report",
                                              "history", "queue", "show", "cancel",   "logs"};
  static const std::set<std::string> slurm{"conf", "exec", "status"};
  if (argc < 2) return false;
  if (commands.count(argv[1])) return true;
  return std::string(argv[1]) == "slurm" && argc >= 3 && slurm.count(argv[2]);
}

int hand_to_colo_torch(char** argv) {
  std::string self = colo::this_program_path();
  std::string torch = self.substr(0, self.rfind('/') + 1) + "colo-torch";
  ::execv(torch.c_str(), argv);
  std::fprintf(stderr, "colo: error: cannot run %s (%s): it runs this command and should be beside %s\n",
               torch.c_str(), std::strerror(errno), self.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (!runs_here(argc, argv)) return hand_to_colo_torch(argv);
  colo::init_logging();
  CLI::App app{"colo: pack many neural-network training runs onto GPUs"};
  app.require_subcommand(1);
  int exit_code = 0;
  colo::cli::add_gpus_command(app, exit_code);
  colo::cli::add_monitor_command(app, exit_code);
  colo::cli::add_mps_command(app, exit_code);
  colo::cli::add_simulate_command(app, exit_code);
  colo::cli::add_trace_command(app, exit_code);
  colo::cli::add_report_command(app, exit_code);
  colo::cli::add_queue_command(app, exit_code);
  colo::cli::add_history_command(app, exit_code);
  colo::cli::add_job_commands(app, exit_code);
  colo::cli::add_slurm_command(app, exit_code);
  return colo::cli::run_command_line(app, argc, argv, exit_code);
}
