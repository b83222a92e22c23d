#pragma once
// Process groups (and single processes) stopped for a while (SIGSTOP) and
// then let run on (SIGCONT). A watchdog process continues them if this
// process dies or stalls first: colo killed during a pause never leaves a
// job stopped.

#include <sys/types.h>

#include <vector>

namespace colo {

class PausedGroups {
 public:
  // Stops every group in `pgids` and every process in `pids` now. Its
  // watchdog continues them if this process dies before resume(), or once
  // `limit_s` has passed. Throws std::runtime_error (nothing stopped) when
  // the watchdog cannot start.
  PausedGroups(std::vector<pid_t> pgids, double limit_s, const std::vector<pid_t>& pids = {});
  PausedGroups(const PausedGroups&) = delete;
  PausedGroups& operator=(const PausedGroups&) = delete;
  // Continues them (resume()).
  ~PausedGroups();
  // Continues every group now and dismisses the watchdog; later calls do
  // nothing.
  void resume();

 private:
  std::vector<pid_t> targets_;  // kill()'s first argument: -pgid for a group, pid for one process
  int dismiss_fd_ = -1;  // one byte through it: the watchdog exits without signalling
  pid_t watchdog_ = -1;
};

}  // namespace colo
