#include "colo/fuse/sweep_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace colo::fuse {

std::vector<nlohmann::json> expand_axes(const std::vector<SweepAxis>& axes, const std::string& sampling,
                                        int64_t count, uint64_t seed) {
  std::vector<nlohmann::json> combos;
  if (sampling == "grid") {
    combos.push_back(nlohmann::json::object());
    for (const auto& axis : axes) {
      std::vector<nlohmann::json> next;
      for (const auto& combo : combos) {
        for (const auto& value : axis.values) {
          nlohmann::json c = combo;
          c[axis.name] = value;
          next.push_back(c);
        }
      }
      combos = std::move(next);
    }
    if (count > 0 && static_cast<int64_t>(combos.size()) > count) combos.resize(static_cast<size_t>(count));
    return combos;
  }
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < count; ++i) {
    nlohmann::json c = nlohmann::json::object();
    for (const auto& axis : axes) {
      if (axis.range) {
        std::uniform_real_distribution<double> u(axis.log ? std::log(axis.min) : axis.min,
                                                 axis.log ? std::log(axis.max) : axis.max);
        double v = u(gen);
        c[axis.name] = axis.log ? std::exp(v) : v;
      } else {
        std::uniform_int_distribution<size_t> pick(0, axis.values.size() - 1);
        c[axis.name] = axis.values[pick(gen)];
      }
    }
    combos.push_back(c);
  }
  return combos;
}

bool is_rung(const Halving& halving, int64_t epoch) {
  return std::find(halving.rungs.begin(), halving.rungs.end(), epoch) != halving.rungs.end();
}

std::vector<int64_t> halving_survivors(const std::vector<double>& accuracies, double keep) {
  std::vector<int64_t> order(accuracies.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return accuracies[static_cast<size_t>(a)] > accuracies[static_cast<size_t>(b)];
  });
  auto kept = static_cast<size_t>(
      std::max<int64_t>(1, std::llround(std::ceil(keep * static_cast<double>(accuracies.size())))));
  order.resize(std::min(kept, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace colo::fuse
