#pragma once
// A one-line progress display on a terminal.

#include <string>

#include "colo/core/stopwatch.h"

namespace colo::train {

// Rewrites one line of stderr in place, at most a few times a second. Shown
// only when stderr is a terminal (or $COLO_PROGRESS=1; $COLO_PROGRESS=0 hides
// it). Not thread-safe.
class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine() { clear(); }

  // True when an update would be shown now; lets callers skip costly text.
  bool due() const;
  void show(const std::string& text);
  // Erases the line so a table row can take its place.
  void clear();

 private:
  bool enabled_;
  bool visible_ = false;
  Stopwatch since_update_;
};

}  // namespace colo::train
