#pragma once
// `colo submit`: jobs into the job store from any process (or to the running
// colod), while `colo run --store DB --serve` (or a later `colo run`) runs
// what it holds. `colo show`, `cancel` and `logs` are in job_commands.h.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_submit_commands(CLI::App& app, int& exit_code);

}  // namespace colo::cli
