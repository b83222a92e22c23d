#include "colo/fuse/sweep.h"

#include <cstdlib>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include <torch/serialize/output-archive.h>

#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/paths.h"
#include "colo/core/stopwatch.h"
#include "colo/core/table.h"
#include "colo/data/dataset_registry.h"
#include "colo/gpu/torch_device.h"

namespace colo::fuse {
namespace {

nlohmann::json effective_config(const SweepConfig& config) {
  const train::TrainSpec& s = config.spec;
  return {{"model", config.index},
          {"values", config.values},
          {"seed", s.seed},
          {"shuffle_seed", s.shuffle_seed},
          {"model_name", s.model.name},
          {"optimizer", {{"name", s.optimizer.name}, {"lr", s.optimizer.lr},
                         {"momentum", s.optimizer.momentum}, {"weight_decay", s.optimizer.weight_decay},
                         {"betas", {s.optimizer.beta1, s.optimizer.beta2}}}},
          {"dropout", s.model.dropout},
          {"widths", s.model.widths},
          {"width", s.model.width},
          {"batch_size", s.batch_size},
          {"epochs", s.epochs}};
}

// The configurations in arrays: grouped by array_key in order of first
// appearance, each group cut into arrays of at most `capacity_of(group)`.
std::vector<std::vector<const SweepConfig*>> plan_arrays(
    const std::vector<SweepConfig>& configs,
    const std::function<int64_t(const train::TrainSpec&)>& capacity_of) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const SweepConfig*>> groups;
  for (const auto& config : configs) {
    std::string key = array_key(config.spec);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&config);
  }
  std::vector<std::vector<const SweepConfig*>> arrays;
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

void print_ranking(const SweepResult& result) {
  TablePrinter table({{"rank", 4}, {"model", 5}, {"test acc", 8}, {"best acc", 8}, {"loss", 7},
                      {"epochs", 6}, {"array", 5}, {"values", 0}});
  table.header();
  int rank = 0;
  for (const auto& m : result.models) {
    table.row({std::to_string(++rank), std::to_string(m.index), percent(m.test_accuracy, 2),
               percent(m.best_test_accuracy, 2), fixed(m.loss, 4),
               std::to_string(m.epochs) + (m.stopped ? "*" : ""), std::to_string(m.array),
               m.values.dump()});
  }
  if (std::any_of(result.models.begin(), result.models.end(), [](const auto& m) { return m.stopped; })) {
    std::printf("* stopped at a halving rung\n");
  }
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

}  // namespace

int64_t array_capacity(const train::TrainSpec& spec, const data::Dataset& dataset,
                       const c10::Device& device) {
  if (!device.is_cuda()) return 64;
  auto peak_of = [&](int64_t models) {
    std::vector<train::TrainSpec> specs(static_cast<size_t>(models), spec);
    ArrayOptions options;
    options.cuda_graph = false;
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

SweepResult run_sweep(const SweepSpec& spec) {
  std::vector<SweepConfig> configs = expand_sweep(spec);
  const train::TrainSpec& base = spec.base;
  c10::Device device = gpu::resolve_device(base.device, base.source, "device");
  data::Dataset dataset = data::load_dataset(base.data);
  ensure_writable_dir(base.output, base.source, "output");  // after every input is read
  std::printf("sweep: %zu configurations of %s on %s (%s)\n", configs.size(), base.model.name.c_str(),
              dataset.name.c_str(), gpu::describe_device(device).c_str());
  std::fflush(stdout);

  Stopwatch wall;
  std::map<std::string, int64_t> capacities;
  auto capacity_of = [&](const train::TrainSpec& s) {
    if (spec.max_array > 0) return spec.max_array;
    std::string key = array_key(s);
    if (!capacities.count(key)) capacities[key] = array_capacity(s, dataset, device);
    return capacities[key];
  };
  auto arrays = plan_arrays(configs, capacity_of);

  JsonLinesWriter sweep_log(base.output + "/sweep.jsonl", JsonLinesWriter::Mode::kTruncate);
  SweepResult result;
  result.arrays = static_cast<int64_t>(arrays.size());
  result.device = gpu::describe_device(device);
  std::map<int64_t, SweepModelResult> by_index;
  ArrayOptions options;
  options.cuda_graph = spec.cuda_graph;
  options.channels_last = spec.channels_last;
  options.bf16_autocast = spec.bf16_autocast;

  std::map<int64_t, std::unique_ptr<JsonLinesWriter>> metrics;
  for (size_t a = 0; a < arrays.size(); ++a) {
    result.array_sizes.push_back(static_cast<int64_t>(arrays[a].size()));
    for (const SweepConfig* config : arrays[a]) {
      std::string dir = base.output + "/model-" + std::to_string(config->index);
      make_directories(dir);
      write_file_atomically(dir + "/config.json", effective_config(*config).dump(2) + "\n");
      metrics[config->index] = std::make_unique<JsonLinesWriter>(dir + "/metrics.jsonl", JsonLinesWriter::Mode::kTruncate);
      SweepModelResult& r = by_index[config->index];
      r.index = config->index;
      r.values = config->values;
      r.array = static_cast<int64_t>(a);
    }
  }

  int64_t last_epoch = 0, epoch_models = 0, best_model = -1;
  double epoch_best = 0, epoch_rate = 0;
  auto report_epoch = [&]() {
    if (last_epoch == 0) return;
    std::printf("  epoch %lld/%lld: %lld models, best test acc %s (model %lld), %.0f samples/s\n",
                static_cast<long long>(last_epoch), static_cast<long long>(base.epochs),
                static_cast<long long>(epoch_models), percent(epoch_best, 2).c_str(),
                static_cast<long long>(best_model), epoch_rate);
    std::fflush(stdout);
    last_epoch = 0;
  };
  auto record_epoch = [&](size_t a, int64_t position, const train::EpochRecord& record) {
    const SweepConfig* config = arrays[a][static_cast<size_t>(position)];
    simulate_oom_for_tests(arrays[a].size(), record.epoch);
    if (record.epoch != last_epoch) {
      report_epoch();
      last_epoch = record.epoch;
      epoch_best = epoch_rate = 0;
      epoch_models = 0;
    }
    ++epoch_models;
    nlohmann::json line = train::to_json(record);
    metrics[config->index]->write(line);
    line["model"] = config->index;
    line["array"] = a;
    line["values"] = config->values;
    sweep_log.write(line);
    SweepModelResult& r = by_index[config->index];
    r.epochs = record.epoch;
    r.test_accuracy = record.test_accuracy;
    r.best_test_accuracy = std::max(r.best_test_accuracy, record.test_accuracy);
    r.loss = record.loss;
    epoch_rate += record.samples_per_s;
    if (record.test_accuracy >= epoch_best) {
      epoch_best = record.test_accuracy;
      best_model = config->index;
    }
  };
  // Trains arrays [from, to) of the plan in one data pass, then saves them.
  auto train_arrays = [&](size_t from, size_t to) {
    std::vector<std::unique_ptr<ArrayTrainer>> trainers;
    std::vector<ArrayTrainer*> members;
    for (size_t a = from; a < to; ++a) {
      std::vector<train::TrainSpec> specs;
      for (const SweepConfig* config : arrays[a]) specs.push_back(config->spec);
      std::printf("array %zu/%zu: %zu models (%s)\n", a + 1, arrays.size(), specs.size(),
                  array_key(specs.front()).c_str());
      trainers.push_back(std::make_unique<ArrayTrainer>(specs, dataset, device, options));
      members.push_back(trainers.back().get());
    }
    std::fflush(stdout);
    train_side_by_side(
        members, [&](size_t i, int64_t position, const train::EpochRecord& r) { record_epoch(from + i, position, r); },
        spec.halving_enabled ? &spec.halving : nullptr,
        [&](size_t i, int64_t position, int64_t) { by_index[arrays[from + i][static_cast<size_t>(position)]->index].stopped = true; });
    report_epoch();
    for (size_t i = 0; i < trainers.size(); ++i) {
      if (!trainers[i]->graph_error().empty()) {
        std::printf("  note: CUDA graph capture failed, array %zu ran eagerly: %s\n", from + i + 1,
                    trainers[i]->graph_error().c_str());
      }
      const auto& members_of = arrays[from + i];
      for (size_t position = 0; position < members_of.size(); ++position) {
        const SweepConfig* config = members_of[position];
        if (by_index[config->index].stopped) continue;
        torch::serialize::OutputArchive archive;
        trainers[i]->extract(static_cast<int64_t>(position))->save(archive);
        archive.save_to(base.output + "/model-" + std::to_string(config->index) + "/model.pt");
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
        std::vector<const SweepConfig*> first(arrays[a].begin(), arrays[a].begin() + arrays[a].size() / 2);
        std::vector<const SweepConfig*> second(arrays[a].begin() + arrays[a].size() / 2, arrays[a].end());
        nlohmann::json models = nlohmann::json::array();
        for (const SweepConfig* config : arrays[a]) {
          models.push_back(config->index);
          std::string dir = base.output + "/model-" + std::to_string(config->index);
          metrics[config->index] = std::make_unique<JsonLinesWriter>(dir + "/metrics.jsonl", JsonLinesWriter::Mode::kTruncate);
          SweepModelResult fresh;
          fresh.index = config->index;
          fresh.values = config->values;
          by_index[config->index] = fresh;
        }
        std::printf("array %zu ran out of device memory with %zu models; retrying as %zu + %zu\n", a + 1,
                    arrays[a].size(), first.size(), second.size());
        sweep_log.write({{"event", "oom_split"}, {"array", a}, {"models", models},
                         {"into", {first.size(), second.size()}}, {"error", e.what_without_backtrace()}});
        arrays[a] = std::move(first);
        arrays.insert(arrays.begin() + static_cast<std::ptrdiff_t>(a) + 1, std::move(second));
        for (size_t b = a; b < arrays.size(); ++b) {
          for (const SweepConfig* config : arrays[b]) by_index[config->index].array = static_cast<int64_t>(b);
        }
        --a;  // train the first half next
      }
    }
  }
  result.arrays = static_cast<int64_t>(arrays.size());
  result.array_sizes.clear();
  for (const auto& members : arrays) result.array_sizes.push_back(static_cast<int64_t>(members.size()));
  result.total_s = wall.elapsed_s();
  for (auto& [index, r] : by_index) result.models.push_back(r);
  std::stable_sort(result.models.begin(), result.models.end(),
                   [](const auto& a, const auto& b) { return a.test_accuracy > b.test_accuracy; });
  print_ranking(result);
  std::printf("sweep: %zu models in %lld arrays, %.1f s\n", result.models.size(),
              static_cast<long long>(result.arrays), result.total_s);

  nlohmann::json out;
  out["total_s"] = result.total_s;
  out["arrays"] = result.arrays;
  out["array_sizes"] = result.array_sizes;
  out["device"] = result.device;
  out["models"] = nlohmann::json::array();
  for (const auto& m : result.models) {
    out["models"].push_back({{"model", m.index}, {"values", m.values}, {"array", m.array},
                             {"epochs", m.epochs}, {"stopped", m.stopped},
                             {"test_accuracy", m.test_accuracy},
                             {"best_test_accuracy", m.best_test_accuracy}, {"loss", m.loss}});
  }
  write_file_atomically(base.output + "/results.json", out.dump(2) + "\n");
  return result;
}

}  // namespace colo::fuse
