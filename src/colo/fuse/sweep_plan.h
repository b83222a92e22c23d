#pragma once
// The parts of a sweep that do not depend on what is trained, shared by
// `colo sweep` (zoo models, C++) and colo.fuse.sweep (users' models, Python):
// which configurations a set of axes gives, and which models survive a
// successive-halving rung.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace colo::fuse {

// One axis: the values to take (grid, or random choice), or in random
// sampling a range [min, max], uniform or log-uniform.
struct SweepAxis {
  std::string name;
  std::vector<nlohmann::json> values;
  bool range = false;
  double min = 0, max = 0;
  bool log = false;
};

// Successive halving: at the end of each rung's epoch, the best `keep`
// fraction (rounded up, at least one) of the models still training go on.
struct Halving {
  std::vector<int64_t> rungs;  // epochs, ascending
  double keep = 0.5;
};

// The configurations (axis name -> value), in order: the cartesian product
// of the axes (grid, first axis slowest, capped at `count` when count > 0),
// or `count` random draws from a generator seeded with `seed` (random).
std::vector<nlohmann::json> expand_axes(const std::vector<SweepAxis>& axes, const std::string& sampling,
                                        int64_t count, uint64_t seed);

// Whether `epoch` (1-based, just finished) is one of `halving`'s rungs.
bool is_rung(const Halving& halving, int64_t epoch);

// Positions (ascending) of the models that go on after a rung, given each
// model's test accuracy: the best ceil(keep * n), ties kept in order.
std::vector<int64_t> halving_survivors(const std::vector<double>& accuracies, double keep);

}  // namespace colo::fuse
