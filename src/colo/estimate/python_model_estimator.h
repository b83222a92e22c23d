#pragma once
// The analytical estimate of a Python job's model (python_model.h): colo's
// Python package (colo.estimate) runs in a child process with the job's
// working directory on sys.path, so a user's model code never runs inside
// colo or colod.

#include <string>

#include "colo/estimate/estimator.h"

namespace colo::estimate {

class PythonModelEstimator : public Estimator {
 public:
  // `python`: the interpreter whose torch colo._core was built for;
  // `package_dir`: the directory holding the colo package (build/python).
  // Defaults: $COLO_PYTHON and $COLO_PYTHONPATH, else the build's own.
  // `threads` > 0 caps the child's CPU threads (OMP_NUM_THREADS), so that
  // several estimates at once do not each take every core.
  PythonModelEstimator(std::string python = "", std::string package_dir = "", double timeout_s = 300,
                       int threads = 0);
  std::string name() const override { return "python-model"; }
  // Needs request.python_model; unknown (with the child's last error line)
  // when the model cannot be imported, built or run.
  MemoryEstimate estimate(const EstimateRequest& request) override;

 private:
  std::string python_, package_dir_;
  double timeout_s_;
  int threads_;
};

}  // namespace colo::estimate
