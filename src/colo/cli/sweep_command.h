#pragma once
// `colo sweep sweep.toml`: trains every configuration of a sweep file in
// fused arrays and ranks them.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_sweep_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
