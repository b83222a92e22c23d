#pragma once
// `colo train SPEC [--out DIR] [--resume]`.

#include <CLI/CLI.hpp>

namespace colo::cli {

// Registers the subcommand on `app`; its callback stores its exit status in
// `exit_code`. Bad input surfaces as InputError for main() to report.
void add_train_command(CLI::App& app, int& exit_code);

}  // namespace colo::cli
