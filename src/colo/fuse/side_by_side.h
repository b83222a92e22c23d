#pragma once
// Several arrays (of different architectures, which cannot fuse) trained in
// one process, each on its own CUDA stream: from one shared data pass, or
// each over its own.

#include <vector>

#include "colo/fuse/array_trainer.h"

namespace colo::fuse {

// Trains several arrays (of different architectures, which cannot fuse) in
// one process from one data pass: each batch is cut once and fed to every
// array, each array on its own CUDA stream, so small arrays fill the gaps of
// big ones. On the CPU they run in turn. The arrays must share the data set
// object, device, batch size, epochs and batch order (InputError otherwise).
void train_side_by_side(const std::vector<ArrayTrainer*>& members, const GroupEpochCallback& on_epoch,
                        const Halving* halving = nullptr, const GroupStopCallback& on_stop = {});

// Trains several arrays in one process, each over its own data pass (its
// own data set, batch size, epochs and step budget): one step of each in
// turn, each array on its own CUDA stream, until every one has finished;
// each array's epochs end, and are evaluated, on its own schedule. For
// models that share nothing but the device (a heterogeneous mix). The arrays
// must share the device (InputError otherwise).
void train_each_side_by_side(const std::vector<ArrayTrainer*>& members, const GroupEpochCallback& on_epoch);

}  // namespace colo::fuse
