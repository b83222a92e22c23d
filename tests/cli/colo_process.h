#pragma once
// Runs the `colo` executable under test and captures what it did.

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "colo/core/paths.h"
#include "support/temp_dir.h"

namespace colo::testing {

struct ColoRun {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs `colo <args>` (args already shell-quoted) with stdout and stderr
// captured in files of `dir`.
// `env` is prepended as shell assignments ("A=1 B=2").
inline ColoRun run_colo(const TempDir& dir, const std::string& args, const std::string& env = "") {
  std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  std::string command = "COLO_PROGRESS=0 " + env + " " + COLO_EXECUTABLE + " " + args + " >" + out +
                        " 2>" + err;
  int raw = std::system(command.c_str());
  ColoRun run;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.out = read_file(out);
  run.err = read_file(err);
  return run;
}

}  // namespace colo::testing
