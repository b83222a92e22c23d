#pragma once
// What both colo executables share: the commands that need no LibTorch,
// and what they do with a command line once their commands are added.

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace colo::cli {

// What `colo --help` says colo is.
inline constexpr const char* kColoAbout = "colo: pack many neural-network training runs onto GPUs";

// Adds the commands of colo_cli_base: gpus, monitor, mps, simulate, trace,
// report, queue, history, show, cancel, logs, slurm with conf, exec and
// status, and loader with status and consume. The thin `colo` runs these;
// colo-torch adds the rest beside them (its loader group first).
void add_commands_without_torch(CLI::App& app, int& exit_code);

// Thrown by a command of the thin `colo` that finds, once its input is
// read, that it needs LibTorch: run_command_line lets it through, and the
// thin colo runs the same command line in colo-torch.
struct HandToColoTorch : std::runtime_error {
  HandToColoTorch() : std::runtime_error("this command needs colo-torch") {}
};

// Parses `argv` with `app` (whose callbacks set `exit_code`) and returns the
// process's exit status. An error is printed as one "colo: error: ..." line,
// its text from `describe` when given (e.g. LibTorch's without its backtrace).
int run_command_line(CLI::App& app, int argc, char** argv, const int& exit_code,
                     const std::function<std::string(const std::exception&)>& describe = nullptr);

}  // namespace colo::cli
