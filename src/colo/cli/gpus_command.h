#pragma once
// `colo gpus`: a compact table of the machine's GPUs.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_gpus_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
