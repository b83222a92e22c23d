#pragma once
// Which processes descend from a process group: a job's launcher may start
// workers in sessions or groups of their own (setsid, setpgid), which a
// signal to the job's group does not reach.

#include <sys/types.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace colo {

// The parent and process group of `pid`, from /proc/<pid>/stat (after the
// ") " that ends the command name: state, ppid, pgrp); {-1, -1} when gone.
std::pair<int, int> parent_and_group(uint32_t pid);

// Every live process descended from a member of process group `pgid` that
// is not in that group itself, as /proc shows them now (children of such
// processes too). Empty when there are none or /proc cannot be read.
std::vector<pid_t> descendants_outside_group(pid_t pgid);

}  // namespace colo
