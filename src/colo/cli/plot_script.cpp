#include "colo/cli/plot_script.h"

#include <cstdlib>

namespace colo::cli {

ProcessResult run_plot_script(const std::string& what, const std::string& dir) {
  const char* python_dir = std::getenv("COLO_PYTHON_DIR");
  std::string script = std::string(python_dir ? python_dir : COLO_PYTHON_DIR) + "/colo/plots.py";
  std::string python = "python3";
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    if (run_process({candidate, "-c", "import matplotlib"}, {}, "", 60).exit_code == 0) {
      python = candidate;
      break;
    }
  }
  return run_process({python, script, what, dir}, {}, "", 300);
}

}  // namespace colo::cli
