#pragma once
// Which processes descend from a process group: a job's launcher may start
// workers in sessions or groups of their own (setsid, setpgid), which a
// signal to the job's group does not reach.

#include <sys/types.h>

#include <vector>

namespace colo {

// Every live process descended from a member of process group `pgid` that
// is not in that group itself, as /proc shows them now (children of such
// processes too). Empty when there are none or /proc cannot be read.
std::vector<pid_t> descendants_outside_group(pid_t pgid);

}  // namespace colo
