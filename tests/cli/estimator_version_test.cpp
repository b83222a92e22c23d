// scheduler_estimator_version: what made the scheduler's stored estimates.

#include <gtest/gtest.h>

#include <cstdlib>

#include "colo/core/files.h"
#include "colo/sched/admission.h"
#include "support/temp_dir.h"

namespace colo::sched {
namespace {

// Another colo package (its estimating modules rebuilt or changed) is
// another version, so estimates stored by the older one are made again.
TEST(SchedulerEstimatorVersion, ChangesWithTheEstimatingModulesAndOnlyThen) {
  testing::TempDir dir;
  make_directories(dir.file("colo"));
  dir.write("colo/estimate.py", "x = 1\n");
  ::setenv("COLO_PYTHONPATH", dir.path().c_str(), 1);
  const std::string first = scheduler_estimator_version();
  EXPECT_EQ(scheduler_estimator_version(), first);
  dir.write("colo/readme.txt", "not an estimating module\n");
  EXPECT_EQ(scheduler_estimator_version(), first);
  dir.write("colo/estimate.py", "x = 12\n");
  const std::string changed = scheduler_estimator_version();
  EXPECT_NE(changed, first);
  dir.write("colo/ops_as_on_gpu.py", "what the CPU records as the GPU runs it\n");
  EXPECT_NE(scheduler_estimator_version(), changed) << "the ops recorded as on a GPU are the estimator's too";
  const std::string with_ops = scheduler_estimator_version();
  dir.write("colo/_core.cpython-311-x86_64-linux-gnu.so", "core");
  EXPECT_NE(scheduler_estimator_version(), with_ops) << "its compiled core too";
  ::unsetenv("COLO_PYTHONPATH");
}

}  // namespace
}  // namespace colo::sched
