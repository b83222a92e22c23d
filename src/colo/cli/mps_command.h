#pragma once
// `colo mps run`: run commands as clients of a private MPS daemon.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_mps_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
