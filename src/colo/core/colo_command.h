#pragma once
// What a job's command says of itself when it runs colo on a spec file:
// `colo train SPEC.toml ...` or `colo sweep SWEEP.toml ...`, as an argv or
// as a shell line. Plain string work, for the layers with and without
// LibTorch alike (estimates are keyed and made from it).

#include <optional>
#include <string>
#include <vector>

namespace colo {

// The command's words: argv entries, each split at whitespace (a shell line).
std::vector<std::string> command_words(const std::vector<std::string>& command);

// A `colo SUBCOMMAND FILE.toml` found in a command.
struct ColoSpecCommand {
  std::string subcommand;          // "train" or "sweep"
  std::string path;                // FILE.toml, relative to the job's workdir when not absolute
  std::vector<std::string> after;  // the words after FILE.toml
};

// The first `colo train|sweep FILE.toml` in `command` (a word ending in
// "colo", the subcommand, a word ending in ".toml"); nullopt when there is
// none.
std::optional<ColoSpecCommand> colo_spec_command(const std::vector<std::string>& command, const std::string& workdir);

}  // namespace colo
