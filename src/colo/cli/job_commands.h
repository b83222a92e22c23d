#pragma once
// `colo show`, `colo cancel`, `colo logs`: one job of a store, or of the
// running colod, from any process. They need no LibTorch: the thin `colo`
// runs them itself (main.cpp).

#include <CLI/CLI.hpp>

namespace colo::cli {

void add_job_commands(CLI::App& app, int& exit_code);

}  // namespace colo::cli
