#include "colo/fuse/sweep.h"

#include <cstdlib>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "colo/core/error.h"
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/core/table.h"
#include "colo/data/dataset_registry.h"
#include "colo/fuse/side_by_side.h"
#include "colo/fuse/sweep_progress.h"
#include "colo/fuse/sweep_records.h"
#include "colo/gpu/torch_device.h"

namespace colo::fuse {
namespace {

// The configurations in arrays: grouped by array_key in order of first
// appearance, each group cut into arrays of at most `capacity_of(group)`.
SweepArrays plan_arrays(
    const std::vector<SweepConfig>& configs,
    const std::function<int64_t(const train::TrainSpec&)>& capacity_of) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const SweepConfig*>> groups;
  for (const auto& config : configs) {
    std::string key = array_key(config.spec);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&config);
  }
  SweepArrays arrays;
  for (const auto& key : order) {
    const auto& group = groups[key];
    auto capacity = static_cast<size_t>(std::max<int64_t>(1, capacity_of(group.front()->spec)));
    // Equal-sized arrays rather than full ones and a straggler.
    size_t count = (group.size() + capacity - 1) / capacity;
    size_t size = (group.size() + count - 1) / count;
    for (size_t start = 0; start < group.size(); start += size) {
      arrays.emplace_back(group.begin() + static_cast<std::ptrdiff_t>(start),
                          group.begin() + static_cast<std::ptrdiff_t>(std::min(group.size(), start + size)));
    }
  }
  return arrays;
}

// Fault injection for tests: with COLO_FAULT_OOM_ABOVE=N, an array of more
// than N models runs out of device memory after its first epoch.
void simulate_oom_for_tests(size_t models, int64_t epoch) {
  const char* limit = std::getenv("COLO_FAULT_OOM_ABOVE");
  if (limit && epoch == 1 && static_cast<int64_t>(models) > std::atoll(limit)) {
    throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                "simulated out of memory (COLO_FAULT_OOM_ABOVE=" + std::string(limit) + ")");
  }
}

// Splits arrays[a] into two halves in place (the first stays at a).
void split_array(SweepArrays& arrays, size_t a) {
  auto middle = arrays[a].begin() + static_cast<std::ptrdiff_t>(arrays[a].size() / 2);
  std::vector<const SweepConfig*> second(middle, arrays[a].end());
  arrays[a].erase(middle, arrays[a].end());
  arrays.insert(arrays.begin() + static_cast<std::ptrdiff_t>(a) + 1, std::move(second));
}

std::string format_note(const char* format, size_t a, size_t b, size_t c, size_t d) {
  char line[256];
  std::snprintf(line, sizeof line, format, a, b, c, d);
  return line;
}

}  // namespace

int64_t array_capacity(const train::TrainSpec& spec, const data::Dataset& dataset,
                       const c10::Device& device, data::SharedBatches* shared) {
  if (!device.is_cuda()) return 64;
  auto peak_of = [&](int64_t models) {
    std::vector<train::TrainSpec> specs(static_cast<size_t>(models), spec);
    ArrayOptions options;
    options.cuda_graph = false;
    options.shared = shared;
    ArrayTrainer probe(specs, dataset, device, options);
    gpu::reset_peak_memory(device);
    probe.train_steps(3);
    return gpu::peak_memory_bytes(device).value_or(0);
  };
  int64_t one = peak_of(1), two = peak_of(2);
  int64_t per_model = std::max<int64_t>(two - one, 1 << 20);
  int64_t base = std::max<int64_t>(one - per_model, 0);
  int64_t free = gpu::free_memory_bytes(device).value_or(0);
  int64_t capacity = (free * 85 / 100 - base) / per_model;
  std::printf("array size: %s per model + %s base, %s free -> up to %lld models per array\n",
              bytes_human(static_cast<double>(per_model)).c_str(), bytes_human(static_cast<double>(base)).c_str(),
              bytes_human(static_cast<double>(free)).c_str(), static_cast<long long>(capacity));
  return std::clamp<int64_t>(capacity, 1, 1024);
}

SweepResult run_sweep(const SweepSpec& spec, SweepObserver* observer) {
  SweepConsole console(spec.base.epochs);
  SweepObserver& report = observer ? *observer : console;
  std::vector<SweepConfig> configs = expand_sweep(spec);
  if (!spec.only.empty()) {
    for (int64_t index : spec.only) {
      if (index < 0 || index >= static_cast<int64_t>(configs.size())) {
        throw InputError(spec.base.source, "--only", "configuration indices in [0, " +
                                                          std::to_string(configs.size()) + "), got " +
                                                          std::to_string(index));
      }
    }
    std::vector<SweepConfig> kept;
    for (const SweepConfig& c : configs) {
      if (std::find(spec.only.begin(), spec.only.end(), c.index) != spec.only.end()) kept.push_back(c);
    }
    configs = std::move(kept);
  }
  const train::TrainSpec& base = spec.base;
  c10::Device device = gpu::resolve_device(base.device, base.source, "device");
  // A shared loader's producer serves the batches; every array reads it.
  if (spec.halving_enabled && data::find_dataset(base.data.name).streamed) {
    throw InputError(base.source, "sweep.halving", "a test split to rank by: a shared loader serves none");
  }
  data::RunData run_data = data::open_run_data(base.data, base.batch_size, device);
  const data::Dataset& dataset = run_data.dataset;
  data::SharedBatches* shared = run_data.shared.get();
  ensure_writable_dir(base.output, base.source, "output");  // after every input is read
  report.on_start(configs.size(), base.model.name, dataset.name, gpu::describe_device(device));

  Stopwatch wall;
  std::map<std::string, int64_t> capacities;
  auto capacity_of = [&](const train::TrainSpec& s) {
    if (spec.max_array > 0) return spec.max_array;
    std::string key = array_key(s);
    if (!capacities.count(key)) capacities[key] = array_capacity(s, dataset, device, shared);
    return capacities[key];
  };
  SweepArrays arrays = plan_arrays(configs, capacity_of);
  SweepRecords records(base.output, arrays);
  ArrayOptions options;
  options.cuda_graph = spec.cuda_graph;
  options.channels_last = spec.channels_last;
  options.bf16_autocast = spec.bf16_autocast;
  options.shared = shared;

  // Trains arrays [from, to) of the plan in one data pass, then saves them.
  auto train_arrays = [&](size_t from, size_t to) {
    std::vector<std::unique_ptr<ArrayTrainer>> trainers;
    std::vector<ArrayTrainer*> members;
    for (size_t a = from; a < to; ++a) {
      std::vector<train::TrainSpec> specs;
      for (const SweepConfig* config : arrays[a]) specs.push_back(config->spec);
      report.on_array(a, arrays.size(), specs.size(), array_key(specs.front()));
      trainers.push_back(std::make_unique<ArrayTrainer>(specs, dataset, device, options));
      members.push_back(trainers.back().get());
    }
    auto config_at = [&](size_t i, int64_t position) -> const SweepConfig& {
      return *arrays[from + i][static_cast<size_t>(position)];
    };
    train_side_by_side(
        members,
        [&](size_t i, int64_t position, const train::EpochRecord& r) {
          simulate_oom_for_tests(arrays[from + i].size(), r.epoch);
          records.record(from + i, config_at(i, position), r);
          report.on_epoch(config_at(i, position).index, from + i, r);
        },
        spec.halving_enabled ? &spec.halving : nullptr,
        [&](size_t i, int64_t position, int64_t) { records.stop(config_at(i, position).index); });
    report.on_arrays_done();
    for (size_t i = 0; i < trainers.size(); ++i) {
      if (!trainers[i]->graph_error().empty()) {
        report.on_note("  note: CUDA graph capture failed, array " + std::to_string(from + i + 1) +
                       " ran eagerly: " + trainers[i]->graph_error());
      }
      for (size_t position = 0; position < arrays[from + i].size(); ++position) {
        int64_t model = arrays[from + i][position]->index;
        if (!records.stopped(model)) records.save_model(model, *trainers[i]->extract(static_cast<int64_t>(position)));
      }
    }
  };
  if (spec.side_by_side) {
    train_arrays(0, arrays.size());
  } else {
    for (size_t a = 0; a < arrays.size(); ++a) {
      try {
        train_arrays(a, a + 1);
      } catch (const c10::OutOfMemoryError& e) {
        // The capacity estimate was too generous: split the array in two
        // and train both halves from scratch (down to single models).
        if (arrays[a].size() < 2) throw;
        gpu::release_cached_memory(device);
        records.restart(arrays[a]);
        nlohmann::json models = nlohmann::json::array();
        for (const SweepConfig* config : arrays[a]) models.push_back(config->index);
        size_t first = arrays[a].size() / 2, second = arrays[a].size() - first;
        report.on_note(format_note("array %zu ran out of device memory with %zu models; retrying as %zu + %zu",
                                   a + 1, arrays[a].size(), first, second));
        records.log_event({{"event", "oom_split"}, {"array", a}, {"models", models},
                           {"into", {first, second}}, {"error", e.what_without_backtrace()}});
        split_array(arrays, a);
        records.assign(arrays);
        --a;  // train the first half next
      }
    }
  }
  SweepResult result = records.finish(arrays, wall.elapsed_s(), gpu::describe_device(device));
  report.on_done(result);
  return result;
}

}  // namespace colo::fuse
