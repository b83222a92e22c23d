#pragma once
// Energy a GPU used while no scheduler watched it (colod stopped, killed or
// restarting), split among the jobs that ran on it meanwhile.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace colo::sched {

// One job's run on a GPU, as the store and its status file tell it after
// the fact. Times are seconds since the epoch.
struct UnwatchedRun {
  int64_t id = 0;
  double start_unix_s = 0;
  std::optional<double> end_unix_s;  // nullopt: still running
  double share = 0.5;                // what its energy is split by (energy_share_for)
};

// Splits `energy_j`, which one GPU used between `from_unix_s` and
// `to_unix_s`, by the rule the runner follows while it watches: at each
// moment among the runs going on, in proportion to their shares, and to
// no job while none runs. The GPU's power over the interval is unknown,
// so it is taken as constant: the split is an estimate, exact for a job
// alone on the GPU throughout. Returns joules by job id, only for runs that
// overlap the interval; empty for an empty interval or no energy.
std::map<int64_t, double> split_energy_while_down(double energy_j, double from_unix_s, double to_unix_s,
                                                  const std::vector<UnwatchedRun>& runs);

}  // namespace colo::sched
