#pragma once
// `colo dist cluster.toml`: data-parallel training of one model over many
// workers; `colo dist simulate cluster.toml`: the same strategies on a
// simulated heterogeneous cluster.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_dist_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
