#pragma once
// `colo train A.toml B.toml ...`: different models trained in one process,
// side by side on CUDA streams.

#include <string>
#include <vector>

namespace colo::cli {

// Trains every spec at once: each its own model, optimiser and output
// (`out`/<i>-<model> when `out` is set). Specs that agree on data, batch
// size, epochs and step budget share one pass over the data
// (fuse::train_side_by_side); otherwise each takes its own
// (fuse::train_each_side_by_side). They must share the device (InputError
// names the spec otherwise, before anything is written). `device` overrides
// every spec's. Returns the exit code.
int run_train_side_by_side(const std::vector<std::string>& spec_paths, const std::string& out,
                           const std::string& device);

}  // namespace colo::cli
