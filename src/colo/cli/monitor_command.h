#pragma once
// `colo monitor`: sample the GPUs while a command runs, then summarise.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_monitor_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
