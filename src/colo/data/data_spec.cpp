#include "colo/data/data_spec.h"

#include "colo/data/dataset_registry.h"

namespace colo::data {

DataSpec parse_data_spec(const SpecTable& table) {
  DataSpec spec;
  spec.name = table.choice_or("name", spec.name, dataset_names());
  const DatasetEntry& entry = find_dataset(spec.name);
  if (entry.synthetic) {
    spec.shape = table.integers_or("shape", spec.shape, 1);
    if (spec.shape.empty()) table.fail("shape", "expected a non-empty array of sizes");
    spec.classes = table.integer_or("classes", spec.classes, 2);
    spec.train_size = table.integer_or("train_size", spec.train_size, 1);
    spec.test_size = table.integer_or("test_size", spec.test_size, 1);
    spec.tokens = table.boolean_or("tokens", spec.tokens);
    spec.vocab = table.integer_or("vocab", spec.tokens ? 256 : 0, spec.tokens ? 2 : 0);
    spec.seed = static_cast<uint64_t>(table.integer_or("seed", 0, 0));
    if (spec.tokens && spec.shape.size() != 1) {
      table.fail("shape", "expected [sequence_length] for token data");
    }
  } else if (entry.streamed) {
    spec.loader = table.string_or("loader", "");
    if (spec.loader.empty()) {
      table.fail("loader", "missing: data set " + spec.name + " needs the producer's DATA.toml or address");
    }
    spec.loader_timeout_s = table.number_or("loader_timeout_s", spec.loader_timeout_s, 0.5, 3600.0);
    spec.load_locally_if_lost = table.choice_or("on_producer_lost", "raise", {"raise", "load_locally"}) == "load_locally";
    if (spec.load_locally_if_lost && !loader_is_data_file(spec.loader)) {
      table.fail("on_producer_lost", "\"load_locally\" needs `loader` to be the producer's DATA.toml (its pipeline), "
                                     "not only its address");
    }
  } else {
    spec.path = table.string_or("path", entry.default_path);
    if (spec.path.empty()) table.fail("path", "missing: data set " + spec.name + " needs a path");
  }
  spec.train_limit = table.integer_or("train_limit", 0, 0);
  spec.test_limit = table.integer_or("test_limit", 0, 0);
  spec.normalize = table.boolean_or("normalize", spec.normalize);
  spec.augment = table.boolean_or("augment", spec.augment);
  spec.pin_memory = table.boolean_or("pin_memory", spec.pin_memory);
  spec.prefetch = table.integer_or("prefetch", spec.prefetch, 0, 64);
  spec.on_device = table.boolean_or("on_device", spec.on_device);
  table.reject_unknown();
  return spec;
}

bool loader_is_data_file(const std::string& loader) { return loader.ends_with(".toml"); }

std::string data_key(const DataSpec& s) {
  std::string key = s.name + "|" + s.path + "|" + s.loader + "|";
  for (int64_t d : s.shape) key += std::to_string(d) + ",";
  for (int64_t v : {s.classes, s.train_size, s.test_size, s.vocab, s.train_limit, s.test_limit}) {
    key += "|" + std::to_string(v);
  }
  key += "|" + std::to_string(s.seed) + "|" + std::to_string(s.tokens) + std::to_string(s.normalize) +
         std::to_string(s.augment);
  return key;
}

}  // namespace colo::data
