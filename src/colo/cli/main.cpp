// The colo command. The commands that need no LibTorch run here, so that
// they start at once; every other command line (and --help) goes to
// colo-torch beside this program, which runs them all (torch_main.cpp), by
// exec: the same process, its signals and its exit status.

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <CLI/CLI.hpp>

#include "colo/cli/command_line.h"
#include "colo/cli/loader_producer_commands.h"
#include "colo/core/log.h"
#include "colo/core/paths.h"

namespace {

// Whether `app` (or its subcommand argv[1]) has a subcommand named by the
// next word of the command line: then this program runs it.
bool runs_here(const CLI::App& app, int argc, char** argv) {
  const CLI::App* level = &app;
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (!word.empty() && word[0] == '-') return false;  // an option before the command: colo-torch says
    try {
      level = level->get_subcommand(word);
    } catch (const CLI::OptionNotFound&) {
      return false;
    }
    if (level->get_subcommands([](const CLI::App*) { return true; }).empty()) return true;  // a command, not a group
  }
  return false;
}

int hand_to_colo_torch(char** argv) {
  std::string self = colo::this_program_path();
  std::string torch = self.substr(0, self.rfind('/') + 1) + "colo-torch";
  ::execv(torch.c_str(), argv);
  std::fprintf(stderr, "colo: error: cannot run %s (%s): it runs this command and should be beside %s\n",
               torch.c_str(), std::strerror(errno), self.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{colo::cli::kColoAbout};
  app.require_subcommand(1);
  int exit_code = 0;
  colo::cli::add_commands_without_torch(app, exit_code);
  colo::cli::add_loader_producer_commands(app, exit_code, colo::cli::providers_without_torch());
  if (!runs_here(app, argc, argv)) return hand_to_colo_torch(argv);
  colo::init_logging();
  try {
    return colo::cli::run_command_line(app, argc, argv, exit_code);
  } catch (const colo::cli::HandToColoTorch&) {
    return hand_to_colo_torch(argv);
  }
}
