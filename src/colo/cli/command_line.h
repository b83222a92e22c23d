#pragma once
// What both colo executables do with a command line once their commands
// are added: parse it, run the chosen command and turn errors into colo's
// exit statuses (0, 1, 2 for bad input: core/error.h).

#include <exception>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace colo::cli {

// Parses `argv` with `app` (whose callbacks set `exit_code`) and returns the
// process's exit status. An error is printed as one "colo: error: ..." line,
// its text from `describe` when given (e.g. LibTorch's without its backtrace).
int run_command_line(CLI::App& app, int argc, char** argv, const int& exit_code,
                     const std::function<std::string(const std::exception&)>& describe = nullptr);

}  // namespace colo::cli
