#include "colo/cli/train_side_by_side.h"

#include <map>
#include <memory>

#include <spdlog/spdlog.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/json_lines.h"
#include "colo/core/paths.h"
#include "colo/core/table.h"
#include "colo/data/dataset_registry.h"
#include "colo/data/shared_batches.h"
#include "colo/fuse/array_trainer.h"
#include "colo/fuse/side_by_side.h"
#include "colo/gpu/torch_device.h"
#include "colo/train/train_spec.h"

namespace colo::cli {

int run_train_side_by_side(const std::vector<std::string>& spec_paths, const std::string& out,
                           const std::string& device) {
  std::vector<train::TrainSpec> specs;
  for (const std::string& path : spec_paths) specs.push_back(train::parse_train_spec(path));
  const train::TrainSpec& first = specs.front();
  // One data pass serves every model when they agree on data, batch size,
  // epochs and step budget; otherwise each takes its own pass.
  bool one_pass = true;
  for (size_t i = 0; i < specs.size(); ++i) {
    train::TrainSpec& s = specs[i];
    if (!device.empty()) s.device = device;
    if (!out.empty()) s.output = out + "/" + std::to_string(i) + "-" + s.model.name;
    if (s.device != first.device) {
      throw InputError(s.source, "device", "the same as " + first.source + "'s: models trained side by side share one device");
    }
    one_pass = one_pass && data::data_key(s.data) == data::data_key(first.data) && s.batch_size == first.batch_size &&
               s.epochs == first.epochs && s.max_steps == first.max_steps;
  }
  for (size_t i = 0; i < specs.size(); ++i) {  // one model's records would overwrite another's
    for (size_t j = 0; j < i; ++j) {
      if (absolute_path(specs[i].output) == absolute_path(specs[j].output)) {
        throw InputError(specs[i].source, "output",
                         "a folder of its own, not " + specs[j].source + "'s (" + specs[j].output + "); or give --out");
      }
    }
  }
  c10::Device where = gpu::resolve_device(first.device, first.source, "device");
  for (const train::TrainSpec& s : specs) ensure_writable_dir(s.output, s.source, "output");
  // Data read into memory is loaded once per data set. A shared loader's
  // batches serve one pass: one consumer for a shared pass, one per model
  // otherwise.
  std::map<std::string, data::RunData> loaded;
  std::vector<std::unique_ptr<data::RunData>> own_consumers;
  auto run_data_for = [&](const train::TrainSpec& s) -> data::RunData& {
    if (!one_pass && data::find_dataset(s.data.name).streamed) {
      own_consumers.push_back(std::make_unique<data::RunData>(data::open_run_data(s.data, s.batch_size, where)));
      return *own_consumers.back();
    }
    const std::string key = data::data_key(s.data);
    if (!loaded.count(key)) loaded.emplace(key, data::open_run_data(s.data, s.batch_size, where));
    return loaded.at(key);
  };
  spdlog::info("{} models side by side on {}, {}", specs.size(), gpu::describe_device(where),
               one_pass ? "one data pass for all" : "each over its own data");

  std::vector<std::unique_ptr<fuse::ArrayTrainer>> trainers;
  std::vector<fuse::ArrayTrainer*> members;
  std::vector<std::unique_ptr<JsonLinesWriter>> metrics;
  for (const train::TrainSpec& s : specs) {
    data::RunData& run_data = run_data_for(s);
    fuse::ArrayOptions options;
    options.shared = run_data.shared.get();
    trainers.push_back(
        std::make_unique<fuse::ArrayTrainer>(std::vector<train::TrainSpec>{s}, run_data.dataset, where, options));
    members.push_back(trainers.back().get());
    metrics.push_back(std::make_unique<JsonLinesWriter>(s.output + "/metrics.jsonl", JsonLinesWriter::Mode::kTruncate));
  }
  TablePrinter table({{"model", 16}, {"epoch", 5}, {"step", 7}, {"loss", 7}, {"test_acc", 8}, {"samples/s", 10}});
  table.header();
  auto on_epoch = [&](size_t member, int64_t, const train::EpochRecord& r) {
    metrics[member]->write(train::to_json(r));
    table.row({std::to_string(member) + "-" + specs[member].model.name, std::to_string(r.epoch),
               std::to_string(r.step), fixed(r.loss, 4), percent(r.test_accuracy), fixed(r.samples_per_s, 0)});
  };
  if (one_pass) {
    fuse::train_side_by_side(members, on_epoch);
  } else {
    fuse::train_each_side_by_side(members, on_epoch);
  }
  for (const train::TrainSpec& s : specs) spdlog::info("metrics: {}/metrics.jsonl", s.output);
  return 0;
}

}  // namespace colo::cli
