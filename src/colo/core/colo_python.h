#pragma once
// How colo starts its own Python modules (colo.job_estimate,
// colo.device_profile) as child processes: which interpreter, and where
// the colo package they import lives. A user's own scripts are not run
// this way (they run under the user's interpreter).

#include <string>

namespace colo {

// $COLO_PYTHON when set and not empty, else the interpreter whose torch
// this build's colo._core was built against.
std::string colo_python_interpreter();

// $COLO_PYTHONPATH when set and not empty, else this build's python/ folder.
std::string colo_python_package_dir();

// PYTHONPATH for such a child: `package_dir`, then the caller's own
// $PYTHONPATH when it has one.
std::string colo_python_path(const std::string& package_dir);

}  // namespace colo
