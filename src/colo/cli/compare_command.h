#pragma once
// `colo compare WORKLOAD`: runs one workload at every level of GPU sharing
// and recommends the best for throughput and for energy.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_compare_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
