#pragma once
// `colo train A.toml B.toml ...`: different models trained in one process,
// side by side on CUDA streams, from one pass over their shared data.

#include <string>
#include <vector>

namespace colo::cli {

// Trains every spec at once (fuse::train_side_by_side): each its own model,
// optimiser and output (`out`/<i>-<model> when `out` is set). The specs must
// train on the same data with the same batch size, epochs and step budget;
// otherwise InputError names the first spec and field that differ, before
// anything is written. `device` overrides every spec's. Returns the exit code.
int run_train_side_by_side(const std::vector<std::string>& spec_paths, const std::string& out,
                           const std::string& device);

}  // namespace colo::cli
