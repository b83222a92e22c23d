#pragma once
// colo's logger: one spdlog logger writing to stderr.

#include <spdlog/spdlog.h>

namespace colo {

// Sets up the process-wide logger once. The level comes from $COLO_LOG
// (trace, debug, info, warn, error, off; default info). Idempotent.
void init_logging();

}  // namespace colo
