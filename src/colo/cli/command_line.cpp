#include "colo/cli/command_line.h"

#include <cstdio>
#include <stdexcept>

#include "colo/cli/gpus_command.h"
#include "colo/cli/job_commands.h"
#include "colo/cli/loader_client_commands.h"
#include "colo/cli/monitor_command.h"
#include "colo/cli/mps_command.h"
#include "colo/cli/run_command.h"
#include "colo/cli/simulate_command.h"
#include "colo/cli/slurm_command.h"
#include "colo/core/error.h"

namespace colo::cli {

void add_commands_without_torch(CLI::App& app, int& exit_code) {
  add_gpus_command(app, exit_code);
  add_monitor_command(app, exit_code);
  add_mps_command(app, exit_code);
  add_simulate_command(app, exit_code);
  add_trace_command(app, exit_code);
  add_report_command(app, exit_code);
  add_queue_command(app, exit_code);
  add_history_command(app, exit_code);
  add_job_commands(app, exit_code);
  add_slurm_command(app, exit_code);
  add_loader_client_commands(app, exit_code);
}

int run_command_line(CLI::App& app, int argc, char** argv, const int& exit_code,
                     const std::function<std::string(const std::exception&)>& describe) {
  auto text = [&](const std::exception& e) { return describe ? describe(e) : std::string(e.what()); };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e);
    return status == 0 ? 0 : kExitBadInput;
  } catch (const InputError& e) {
    std::fprintf(stderr, "colo: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "colo: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const HandToColoTorch&) {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "colo: error: %s\n", text(e).c_str());
    return 1;
  }
  return exit_code;
}

}  // namespace colo::cli
