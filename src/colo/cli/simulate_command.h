#pragma once
// `colo simulate`, `colo trace generate` and `colo report`.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_simulate_command(CLI::App& app, int& exit_code);
void add_trace_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
