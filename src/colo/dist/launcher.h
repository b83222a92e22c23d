#pragma once
// `colo dist cluster.toml` on one host: starts the run's workers and
// servers as local processes, watches them, and stops the whole run with a
// clear message as soon as one of them fails.

#include <string>
#include <vector>

#include "colo/dist/cluster_spec.h"

namespace colo::dist {

// Starts spec.world() copies of the command `argv` (`colo dist CLUSTER`, with
// COLO_DIST_RANK / COLO_DIST_WORLD / COLO_DIST_RENDEZVOUS set), worker 0's
// output on this terminal and every other rank's in `<output>/rank<R>.log`;
// lists them in `<output>/processes.json`. When a process fails, names it
// (rank, role, pid, exit status or signal) with the end of its log, stops
// the others, and returns 2 when that process found bad input (exited 2),
// or another did and ended within 2 s of it (a peer often fails first, of
// the connection the bad input closed), else 1; after `spec.timeout_s` plus the expected run time nothing is
// waited on forever because every rank times out itself. With
// [param_server] rejoin_s, a server that dies once a checkpoint was
// committed is started again instead (it restarts from the checkpoint and
// the workers rejoin it), up to 3 times per server, named with its exit
// status. The processes end with the launcher, even when it is killed (-9).
// Returns 0 when all finished and prints the run's table.
int launch_local(const ClusterSpec& spec, const std::vector<std::string>& argv);

// The final table of a finished run, from `<output>/result.json`.
void print_result_table(const std::string& output);

}  // namespace colo::dist
