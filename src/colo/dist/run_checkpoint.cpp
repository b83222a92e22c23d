#include "colo/dist/run_checkpoint.h"

#include <cstring>
#include <stdexcept>

#include <ATen/ATen.h>

#include "colo/core/error.h"
#include "colo/core/files.h"
#include "colo/core/paths.h"

namespace colo::dist {
namespace {

// A worker's file: one line of JSON ({"values", "tensors": [{"dtype",
// "shape"}]}), then each tensor's bytes in that order.
const std::pair<const char*, at::ScalarType> kTypes[] = {
    {"float32", at::kFloat}, {"float64", at::kDouble}, {"int64", at::kLong}, {"int32", at::kInt}, {"uint8", at::kByte}};

std::string type_name(at::ScalarType type) {
  for (const auto& [name, t] : kTypes) {
    if (t == type) return name;
  }
  throw std::invalid_argument(std::string("a checkpoint cannot hold a tensor of type ") + c10::toString(type));
}

bool type_of(const std::string& name, at::ScalarType* type) {
  for (const auto& [n, t] : kTypes) {
    if (name == n) {
      *type = t;
      return true;
    }
  }
  return false;
}

std::string latest_file(const std::string& output) { return checkpoint_directory(output) + "/latest.json"; }

}  // namespace

std::string checkpoint_directory(const std::string& output) { return output + "/checkpoint"; }

std::string worker_checkpoint_file(const std::string& output, int rank, int64_t step) {
  return checkpoint_directory(output) + "/rank" + std::to_string(rank) + "-step" + std::to_string(step) + ".ckpt";
}

void write_worker_checkpoint(const std::string& output, int rank, int64_t step, const WorkerCheckpoint& checkpoint) {
  std::string failure = make_directories(checkpoint_directory(output));
  if (!failure.empty()) throw std::runtime_error("cannot make " + checkpoint_directory(output) + ": " + failure);
  nlohmann::json header{{"values", checkpoint.values}, {"tensors", nlohmann::json::array()}};
  std::vector<at::Tensor> host;
  for (const auto& t : checkpoint.tensors) {
    host.push_back(t.detach().to(at::kCPU).contiguous());
    header["tensors"].push_back({{"dtype", type_name(t.scalar_type())}, {"shape", t.sizes().vec()}});
  }
  std::string contents = header.dump() + "\n";
  for (const auto& t : host) contents.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  write_file_atomically(worker_checkpoint_file(output, rank, step), contents);
}

void commit_checkpoint(const std::string& output, int64_t step, const nlohmann::json& run) {
  write_file_atomically(latest_file(output), nlohmann::json{{"step", step}, {"run", run}}.dump(2) + "\n");
}

void remove_other_checkpoints(const std::string& output, int rank, int64_t keep) {
  const std::string prefix = "rank" + std::to_string(rank) + "-step";
  const std::string kept = "rank" + std::to_string(rank) + "-step" + std::to_string(keep) + ".ckpt";
  for (const auto& name : list_directory(checkpoint_directory(output))) {
    if (name.rfind(prefix, 0) == 0 && name != kept) remove_tree(checkpoint_directory(output) + "/" + name);
  }
}

bool has_committed_checkpoint(const std::string& output) { return path_exists(latest_file(output)); }

nlohmann::json committed_checkpoint(const std::string& output) {
  const std::string path = latest_file(output);
  if (!path_exists(path)) {
    throw InputError(path, "", "a checkpoint to resume from (none was committed: set [cluster] checkpoint_steps)");
  }
  nlohmann::json latest = nlohmann::json::parse(read_file(path), nullptr, false);
  if (latest.is_discarded() || !latest.is_object() || !latest.contains("step") || !latest["step"].is_number_integer() ||
      !latest.contains("run")) {
    throw InputError(path, "", "a JSON object with \"step\" and \"run\" (colo dist writes it)");
  }
  return latest;
}

WorkerCheckpoint read_worker_checkpoint(const std::string& output, int rank, int64_t step) {
  const std::string path = worker_checkpoint_file(output, rank, step);
  const std::string bytes = read_file(path);
  auto bad = [&](const std::string& what) { return InputError(path, "", "a colo dist checkpoint (" + what + ")"); };
  size_t end = bytes.find('\n');
  if (end == std::string::npos) throw bad("no header line");
  nlohmann::json header = nlohmann::json::parse(bytes.substr(0, end), nullptr, false);
  if (header.is_discarded() || !header.contains("values") || !header.contains("tensors") ||
      !header["tensors"].is_array()) {
    throw bad("a malformed header");
  }
  WorkerCheckpoint checkpoint;
  checkpoint.values = header["values"];
  size_t offset = end + 1;
  for (const auto& entry : header["tensors"]) {
    at::ScalarType type;
    if (!entry.contains("dtype") || !entry["dtype"].is_string() || !type_of(entry["dtype"], &type) ||
        !entry.contains("shape") || !entry["shape"].is_array()) {
      throw bad("a tensor entry without a known dtype and a shape");
    }
    auto shape = entry["shape"].get<std::vector<int64_t>>();
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
    if (bytes.size() - offset < t.nbytes()) throw bad("truncated: its tensors end before their size");
    std::memcpy(t.data_ptr(), bytes.data() + offset, t.nbytes());
    offset += t.nbytes();
    checkpoint.tensors.push_back(t);
  }
  if (offset != bytes.size()) throw bad("bytes after its last tensor");
  return checkpoint;
}

}  // namespace colo::dist
