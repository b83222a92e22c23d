#include "colo/slurm/gres.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace colo::slurm {
namespace {

// The count of GRES `name` in one sinfo %G entry list ("gpu:h100:2(S:0),shard:160"); -1 if absent.
int64_t gres_count(const std::string& list, const std::string& name) {
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    item = item.substr(0, item.find('('));
    if (item.rfind(name + ":", 0) != 0) continue;
    size_t last = item.rfind(':');
    try {
      return std::stoll(item.substr(last + 1));
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

}  // namespace

int shards_for(int64_t mem_bytes, int64_t shard_bytes) {
  if (shard_bytes <= 0) throw std::invalid_argument("shard size must be positive");
  int64_t shards = (std::max<int64_t>(mem_bytes, 1) + shard_bytes - 1) / shard_bytes;
  return static_cast<int>(shards);
}

int shards_per_gpu(const NodeGpus& node, int64_t shard_bytes) {
  if (shard_bytes <= 0) throw std::invalid_argument("shard size must be positive");
  return static_cast<int>(node.gpu_mem_bytes / shard_bytes);
}

std::string gres_conf(const NodeGpus& node, int64_t shard_bytes) {
  if (node.device_files.empty()) throw std::invalid_argument("node " + node.node + " has no GPUs");
  if (node.gpu_mem_bytes <= 0) throw std::invalid_argument("node " + node.node + ": GPU memory unknown");
  std::ostringstream out;
  for (const auto& file : node.device_files) out << "NodeName=" << node.node << " Name=gpu File=" << file << "\n";
  out << "NodeName=" << node.node << " Name=shard Count="
      << shards_per_gpu(node, shard_bytes) * static_cast<int>(node.device_files.size()) << "\n";
  return out.str();
}

std::string slurm_conf_lines(const NodeGpus& node, int64_t shard_bytes) {
  int gpus = static_cast<int>(node.device_files.size());
  std::ostringstream out;
  out << "GresTypes=gpu,shard\n"
      << "SelectType=select/cons_tres\n"
      << "SelectTypeParameters=CR_Core\n"
      << "NodeName=" << node.node;
  if (!node.address.empty()) out << " NodeAddr=" << node.address;
  if (node.cpus > 0) out << " CPUs=" << node.cpus;
  if (node.real_mem_mib > 0) out << " RealMemory=" << node.real_mem_mib;
  out << " Gres=gpu:" << gpus << ",shard:" << shards_per_gpu(node, shard_bytes) * gpus << " State=UNKNOWN\n";
  return out.str();
}

int shards_per_gpu_from_sinfo(const std::string& sinfo_gres_lines) {
  std::stringstream lines(sinfo_gres_lines);
  std::string line;
  int best = 0;
  while (std::getline(lines, line)) {
    int64_t gpus = gres_count(line, "gpu");
    int64_t shards = gres_count(line, "shard");
    if (gpus <= 0 || shards <= 0) continue;
    int per_gpu = static_cast<int>(shards / gpus);
    best = best == 0 ? per_gpu : std::min(best, per_gpu);
  }
  return best;
}

}  // namespace colo::slurm
