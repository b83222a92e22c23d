#pragma once
// `colo estimate spec.toml`: the peak GPU memory each estimator expects for a
// training job, with the analytical breakdown.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_estimate_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
