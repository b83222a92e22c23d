#pragma once
// Data sets by name: how each is read and which spec fields it takes.

#include <functional>
#include <string>
#include <vector>

#include "colo/data/data_spec.h"
#include "colo/data/dataset.h"

namespace colo::data {

struct DatasetEntry {
  std::string name;
  std::string description;
  std::string default_path;  // "" when a path must be given
  bool synthetic = false;    // takes shape/classes/sizes instead of a path
  // Reads the data set; throws InputError naming the offending file.
  std::function<Dataset(const DataSpec&)> read;
  // Sample shape and split sizes without reading anything (estimates).
  std::function<DatasetShape(const DataSpec&)> shape;
  bool streamed = false;     // batches come from a producer (`loader`), not splits read into memory
};

// Names of all registered data sets, in registration order.
std::vector<std::string> dataset_names();

// The entry for `name`; throws std::out_of_range for an unknown name
// (callers validate names with dataset_names() first).
const DatasetEntry& find_dataset(const std::string& name);

// The shape and split sizes of the data set `spec` names, its limits
// applied, without reading it.
DatasetShape dataset_shape(const DataSpec& spec);

// Reads the data set `spec` names and applies its train/test limits.
Dataset load_dataset(const DataSpec& spec);

}  // namespace colo::data
