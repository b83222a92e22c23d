#pragma once
// `colo loader`: the shared data loader — serve a pipeline to many jobs,
// write a JPEG data set to serve, ask a running loader for its counters,
// and consume from one (for tests and benchmarks).

#include <CLI/CLI.hpp>

namespace colo::cli {

// Adds the "loader" group's serve and write-images with what needs LibTorch
// (a ring kept on a GPU, a registered data set's images); status and
// consume join it from add_commands_without_torch.
void add_loader_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
