#pragma once
// `colo submit`, `colo show`, `colo cancel`, `colo logs`: the job store from
// any process, while `colo run --store DB --serve` (or a later `colo run`)
// runs what it holds.

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_submit_commands(CLI::App& app, int& exit_code);

}  // namespace colo::cli
