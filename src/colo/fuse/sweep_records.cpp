#include "colo/fuse/sweep_records.h"

#include <algorithm>

#include <torch/serialize/output-archive.h>

#include "colo/core/files.h"
#include "colo/core/paths.h"

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
                         {"momentum", s.optimizer.momentum}, {"nesterov", s.optimizer.nesterov},
                         {"weight_decay", s.optimizer.weight_decay},
                         {"betas", {s.optimizer.beta1, s.optimizer.beta2}}, {"eps", s.optimizer.eps}}},
          {"dropout", s.model.dropout},
          {"widths", s.model.widths},
          {"width", s.model.width},
          {"batch_size", s.batch_size},
          {"epochs", s.epochs}};
}

}  // namespace

SweepRecords::SweepRecords(std::string output, const SweepArrays& arrays)
    : output_(std::move(output)), sweep_log_(output_ + "/sweep.jsonl", JsonLinesWriter::Mode::kTruncate) {
  for (const auto& members : arrays) {
    for (const SweepConfig* config : members) {
      make_directories(model_dir(config->index));
      write_file_atomically(model_dir(config->index) + "/config.json", effective_config(*config).dump(2) + "\n");
    }
    restart(members);
  }
  assign(arrays);
}

void SweepRecords::record(size_t array, const SweepConfig& config, const train::EpochRecord& record) {
  nlohmann::json line = train::to_json(record);
  metrics_[config.index]->write(line);
  line["model"] = config.index;
  line["array"] = array;
  line["values"] = config.values;
  line["samples"] = record.step * config.spec.batch_size;  // trained so far
  sweep_log_.write(line);
  SweepModelResult& r = results_[config.index];
  r.epochs = record.epoch;
  r.test_accuracy = record.test_accuracy;
  r.best_test_accuracy = std::max(r.best_test_accuracy, record.test_accuracy);
  r.loss = record.loss;
}

void SweepRecords::restart(const std::vector<const SweepConfig*>& configs) {
  for (const SweepConfig* config : configs) {
    metrics_[config->index] = std::make_unique<JsonLinesWriter>(model_dir(config->index) + "/metrics.jsonl",
                                                                JsonLinesWriter::Mode::kTruncate);
    SweepModelResult fresh;
    fresh.index = config->index;
    fresh.values = config->values;
    fresh.array = results_.count(config->index) ? results_[config->index].array : 0;
    results_[config->index] = fresh;
  }
}

void SweepRecords::assign(const SweepArrays& arrays) {
  for (size_t a = 0; a < arrays.size(); ++a) {
    for (const SweepConfig* config : arrays[a]) results_[config->index].array = static_cast<int64_t>(a);
  }
}

void SweepRecords::save_model(int64_t model, const models::Classifier& classifier) const {
  torch::serialize::OutputArchive archive;
  classifier.save(archive);
  archive.save_to(model_dir(model) + "/model.pt");
}

SweepResult SweepRecords::finish(const SweepArrays& arrays, double total_s, const std::string& device) const {
  SweepResult result;
  result.arrays = static_cast<int64_t>(arrays.size());
  for (const auto& members : arrays) result.array_sizes.push_back(static_cast<int64_t>(members.size()));
  result.total_s = total_s;
  result.device = device;
  for (const auto& [index, r] : results_) result.models.push_back(r);
  std::stable_sort(result.models.begin(), result.models.end(),
                   [](const auto& a, const auto& b) { return a.test_accuracy > b.test_accuracy; });
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
  write_file_atomically(output_ + "/results.json", out.dump(2) + "\n");
  return result;
}

}  // namespace colo::fuse
