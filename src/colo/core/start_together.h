#pragma once
// How `colo compare` has the N processes of a level that starts them all at
// once (timeslice, mps) begin training together, so that the level is
// measured while all N train, not while the first to finish its start-up
// trains alone: each process gets
//   $COLO_START_TOGETHER           a directory, the same for all N;
//   $COLO_START_TOGETHER_COUNT     N;
//   $COLO_START_TOGETHER_TIMEOUT_S how long one waits at most (default 120).
// At its first progress report (colo train's ProgressWriter,
// colo.report_progress) a process leaves an empty file named by its pid in
// the directory and waits until N files are there or the timeout passes.
// Without the variables nothing waits.

#include <string>

namespace colo {

inline constexpr const char* kStartTogetherVariable = "COLO_START_TOGETHER";
inline constexpr const char* kStartTogetherCountVariable = "COLO_START_TOGETHER_COUNT";
inline constexpr const char* kStartTogetherTimeoutVariable = "COLO_START_TOGETHER_TIMEOUT_S";
inline constexpr double kStartTogetherDefaultTimeoutS = 120.0;

// One process's place in a start-together group.
class StartTogether {
 public:
  // From the environment; does nothing when $COLO_START_TOGETHER or a
  // positive $COLO_START_TOGETHER_COUNT is missing.
  StartTogether();
  StartTogether(std::string directory, int count, double timeout_s);

  // The first call joins the group and returns the seconds it waited for
  // the others (at most the timeout); later calls return 0 at once. A
  // directory that cannot be written to is not waited on.
  double wait();

 private:
  std::string directory_;
  int count_ = 0;
  double timeout_s_ = kStartTogetherDefaultTimeoutS;
  bool done_ = false;
};

}  // namespace colo
