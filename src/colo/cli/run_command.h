#pragma once
// `colo run jobs.toml`: run a batch of jobs in-process (no daemon), and
// `colo queue`: list the jobs of a store.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_run_command(CLI::App& app, int& exit_code);
void add_queue_command(CLI::App& app, int& exit_code);
void add_replay_command(CLI::App& app, int& exit_code);
// `colo history`: finished jobs, like sacct.
void add_history_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
