#pragma once
// `colo loader`: the shared data loader — serve a pipeline to many jobs,
// write a JPEG data set to serve, ask a running loader for its counters,
// and consume from one (for tests and benchmarks).

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_loader_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
