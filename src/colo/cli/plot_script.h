#pragma once
// Runs python/colo/plots.py, which draws colo's PNG reports.

#include <string>

#include "colo/core/subprocess.h"

namespace colo::cli {

// Runs `plots.py WHAT DIR` with the first interpreter that has matplotlib
// (python3 on PATH, else Debian's /usr/bin/python3); $COLO_PYTHON_DIR
// overrides where the package lives. Returns its result (output merged).
ProcessResult run_plot_script(const std::string& what, const std::string& dir);

}  // namespace colo::cli
