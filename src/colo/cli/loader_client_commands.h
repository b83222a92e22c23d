#pragma once
// `colo loader status` and `colo loader consume`: the shared loader's client
// side, which needs no LibTorch, so the thin `colo` runs them at once (a
// script that polls a producer until it answers pays no second of start-up
// per poll).

#include <CLI/CLI.hpp>

namespace colo::cli {

// Adds status and consume to `app`'s "loader" group, creating the group
// when it is not there yet (the thin colo has no other loader command).
void add_loader_client_commands(CLI::App& app, int& exit_code);

// `app`'s "loader" group, created (with kLoaderAbout) when absent.
CLI::App* loader_group(CLI::App& app);

// The "loader" group's one-line description, the same in both executables.
inline constexpr const char* kLoaderAbout = "shared data loading: one pipeline serves many jobs";

}  // namespace colo::cli
