#include "colo/fuse/sweep_spec.h"

#include <cmath>
#include <random>

#include "colo/core/error.h"
#include "colo/core/spec_table.h"
#include "colo/fuse/fused_classifier.h"

namespace colo::fuse {
namespace {

const std::vector<std::string> kAxes{"lr", "momentum", "weight_decay", "optimizer",
                                     "seed", "dropout", "widths", "width"};
const std::vector<std::string> kRangeAxes{"lr", "momentum", "weight_decay", "dropout", "width"};

SweepAxis parse_axis(const SpecTable& axes, const std::string& name, bool random) {
  SweepAxis axis;
  axis.name = name;
  bool rangeable = std::find(kRangeAxes.begin(), kRangeAxes.end(), name) != kRangeAxes.end();
  if (axes.is_table(name)) {
    auto range = axes.table(name);
    if (!random || !rangeable) {
      axes.fail(name, random ? "expected a list of values (no range for this axis)"
                             : "expected a list of values (ranges need sampling = \"random\")");
    }
    axis.range = true;
    axis.min = range->number_or("min", 0, -1e9, 1e9);
    axis.max = range->number_or("max", 0, -1e9, 1e9);
    axis.log = range->boolean_or("log", false);
    if (!range->has("min") || !range->has("max") || !(axis.min < axis.max)) {
      axes.fail(name, "expected a range { min = ..., max = ... } with min < max");
    }
    if (axis.log && axis.min <= 0) axes.fail(name, "a log range needs min > 0");
    range->reject_unknown();
    return axis;
  }
  if (name == "optimizer") {
    for (const auto& v : axes.strings_or(name, {})) {
      if (v != "sgd" && v != "adam" && v != "adamw") {
        axes.fail(name, "expected optimiser names among sgd, adam, adamw, got " + v);
      }
      axis.values.emplace_back(v);
    }
  } else if (name == "widths") {
    for (const auto& v : axes.integer_lists_or(name, {}, 1)) axis.values.emplace_back(v);
  } else if (name == "seed") {
    for (int64_t v : axes.integers_or(name, {}, 0)) axis.values.emplace_back(v);
  } else {
    for (double v : axes.numbers_or(name, {})) axis.values.emplace_back(v);
  }
  if (axis.values.empty()) axes.fail(name, "expected a non-empty list of values");
  return axis;
}

// Applies one axis value to a spec, validating it against the model.
void apply(const SweepSpec& sweep, const std::string& name, const nlohmann::json& value,
           train::TrainSpec& spec) {
  const std::string& src = sweep.base.source;
  auto number_in = [&](double min, double max, const char* what) {
    double v = value.get<double>();
    if (!(v >= min && v <= max)) {
      throw InputError(src, "sweep.axes." + name, std::string("expected ") + what + ", got " + value.dump());
    }
    return v;
  };
  if (name == "lr") {
    spec.optimizer.lr = number_in(1e-12, 1e3, "a learning rate > 0");
  } else if (name == "momentum") {
    spec.optimizer.momentum = number_in(0, 0.9999, "a momentum in [0, 1)");
  } else if (name == "weight_decay") {
    spec.optimizer.weight_decay = number_in(0, 10, "a weight decay in [0, 10]");
  } else if (name == "optimizer") {
    spec.optimizer.name = value.get<std::string>();
    if (spec.optimizer.name != "sgd") {
      spec.optimizer.momentum = 0;
      spec.optimizer.nesterov = false;
    }
  } else if (name == "seed") {
    spec.seed = value.get<uint64_t>();
  } else if (name == "dropout") {
    if (spec.model.name != "mlp" && spec.model.name != "transformer") {
      throw InputError(src, "sweep.axes.dropout", "only mlp and transformer take dropout");
    }
    spec.model.dropout = number_in(0, 0.99, "a dropout rate in [0, 0.99]");
  } else if (name == "widths") {
    if (spec.model.name != "mlp") throw InputError(src, "sweep.axes.widths", "only mlp has hidden widths");
    spec.model.widths = value.get<std::vector<int64_t>>();
  } else if (name == "width") {
    if (spec.model.name != "resnet") throw InputError(src, "sweep.axes.width", "only resnet has a width multiplier");
    spec.model.width = number_in(0.0625, 16, "a width multiplier in [0.0625, 16]");
  }
}

}  // namespace

SweepSpec parse_sweep_spec(const std::string& path) {
  SpecTable root = SpecTable::root(path);
  SweepSpec spec;
  spec.base = train::parse_train_spec_fields(root);
  auto sweep = root.table("sweep");
  if (!sweep) root.fail("sweep", "missing required table [sweep] (a plain training spec runs with colo train)");
  root.reject_unknown();
  spec.sampling = sweep->choice_or("sampling", spec.sampling, {"grid", "random"});
  bool random = spec.sampling == "random";
  spec.count = sweep->integer_or("count", 0, 0, 100000);
  if (random && spec.count == 0) sweep->fail("count", "random sampling needs count >= 1");
  spec.seed = static_cast<uint64_t>(sweep->integer_or("seed", 0, 0));
  spec.max_array = sweep->integer_or("max_array", 0, 0, 4096);
  spec.cuda_graph = sweep->boolean_or("cuda_graph", spec.cuda_graph);
  // Measured on an H100 (bench/results/fusion): NHWC fused ResNet-18 arrays
  // train 1.15-1.4x faster than NCHW at N = 1..32; NCHW LeNet arrays faster.
  spec.channels_last = sweep->boolean_or("channels_last", spec.base.model.name == "resnet");
  spec.bf16_autocast = sweep->boolean_or("bf16_autocast", spec.bf16_autocast);
  spec.side_by_side = sweep->boolean_or("side_by_side", spec.side_by_side);
  if (auto halving = sweep->table("halving")) {
    spec.halving_enabled = true;
    spec.halving.rungs = halving->integers_or("rungs", {}, 1);
    spec.halving.keep = halving->number_or("keep", 0.5, 0.01, 0.99);
    halving->reject_unknown();  // `rung = [1]` is named as it is, not as missing rungs
    if (spec.halving.rungs.empty()) halving->fail("rungs", "expected epochs at which to halve, e.g. [1, 2]");
    for (size_t i = 1; i < spec.halving.rungs.size(); ++i) {
      if (spec.halving.rungs[i] <= spec.halving.rungs[i - 1]) halving->fail("rungs", "expected ascending epochs");
    }
    if (spec.halving.rungs.back() >= spec.base.epochs) {
      halving->fail("rungs", "expected epochs before the last (epochs = " + std::to_string(spec.base.epochs) +
                                 "): a rung at or after it stops no model early");
    }
  }
  auto axes = sweep->table("axes");
  if (!axes) sweep->fail("axes", "missing required table [sweep.axes] (e.g. lr = [0.01, 0.1])");
  for (const auto& name : axes->keys()) {
    if (std::find(kAxes.begin(), kAxes.end(), name) == kAxes.end()) {
      axes->fail(name, "unknown axis (axes: lr, momentum, weight_decay, optimizer, seed, dropout, widths, width)");
    }
    spec.axes.push_back(parse_axis(*axes, name, random));
  }
  if (spec.axes.empty()) sweep->fail("axes", "expected at least one axis");
  sweep->reject_unknown();
  expand_sweep(spec);  // every value is checked against the model now
  return spec;
}

std::vector<SweepConfig> expand_sweep(const SweepSpec& sweep) {
  std::vector<nlohmann::json> combos = expand_axes(sweep.axes, sweep.sampling, sweep.count, sweep.seed);
  std::vector<SweepConfig> configs;
  for (size_t i = 0; i < combos.size(); ++i) {
    SweepConfig config;
    config.index = static_cast<int64_t>(i);
    config.values = combos[i];
    config.spec = sweep.base;
    // The optimiser first, so that an lr axis is not reset by it.
    if (combos[i].contains("optimizer")) apply(sweep, "optimizer", combos[i]["optimizer"], config.spec);
    for (const auto& [name, value] : combos[i].items()) {
      // Momentum is sgd's alone: adam and adamw keep it 0 (sweep-format.md).
      if (name == "momentum" && config.spec.optimizer.name != "sgd") continue;
      if (name != "optimizer") apply(sweep, name, value, config.spec);
    }
    // What colo train would refuse of the same spec is refused here too.
    if (config.spec.optimizer.nesterov && !(config.spec.optimizer.momentum > 0)) {
      throw InputError(sweep.base.source, "sweep.axes.momentum",
                       "expected momentum > 0 with optimizer.nesterov = true (as colo train needs), but configuration " +
                           std::to_string(i) + " " + combos[i].dump() + " has momentum " +
                           std::to_string(config.spec.optimizer.momentum));
    }
    configs.push_back(std::move(config));
  }
  // An array shares one batch order; each model's spec says which, so that
  // `colo train` of that spec repeats the model's training alone.
  for (auto& config : configs) {
    if (config.spec.shuffle_seed < 0) config.spec.shuffle_seed = static_cast<int64_t>(sweep.base.data_order_seed());
  }
  return configs;
}

std::string array_key(const train::TrainSpec& spec) {
  return fusion_key(spec.model) + " batch=" + std::to_string(spec.batch_size) +
         " optimizer=" + spec.optimizer.name + (spec.optimizer.nesterov ? "+nesterov" : "");
}

}  // namespace colo::fuse
