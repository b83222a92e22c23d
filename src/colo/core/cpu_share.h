#pragma once
// How many CPU threads each of several processes sharing this host's cores
// should run, and the environment that tells them (torchrun's convention).

#include <cstddef>

#include "colo/core/subprocess.h"

namespace colo {

// Cores this process may run on (its affinity mask; at least 1).
size_t available_cores();

// Sets OMP_NUM_THREADS in `env` to available_cores() / `processes` (at least
// 1), for one of `processes` processes that run at once on this host, so
// that their intra-op thread pools do not outnumber the cores and spin
// against each other. Leaves `env` alone when it names OMP_NUM_THREADS
// already or this process's own environment does (the user's choice wins).
void share_cores(EnvironmentOverrides& env, size_t processes);

}  // namespace colo
