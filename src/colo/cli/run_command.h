#pragma once
// The scheduler's subcommands over a job store, one file each:
// `colo run jobs.toml` runs a batch in-process (run_command.cpp), `colo
// replay` a trace for real (replay_command.cpp), `colo queue` lists a
// store's jobs (queue_command.cpp), `colo history` its finished ones
// (history_command.cpp).

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_run_command(CLI::App& app, int& exit_code);
void add_queue_command(CLI::App& app, int& exit_code);
void add_replay_command(CLI::App& app, int& exit_code);
// `colo history`: finished jobs, like sacct.
void add_history_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
