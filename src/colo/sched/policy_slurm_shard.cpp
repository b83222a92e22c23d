// slurm-shard: what Slurm's own scheduler does with colo's memory estimates
// when each GPU's memory is cut into shards (gres/shard, colo slurm conf): a
// job goes on the first GPU with enough free shards for its estimate,
// rounded up to whole shards. Slurm knows no SM activity and adds no margin;
// a job of unknown memory asks for a whole GPU. For comparing, in
// simulation, Slurm packing by colo's estimates with colo's own policies.

#include <cmath>

#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

constexpr int64_t kShardBytes = int64_t{1} << 30;  // colo slurm conf's default

class SlurmShardPolicy : public Policy {
 public:
  std::string name() const override { return "slurm-shard"; }
  bool within_collocation_thresholds() const override { return false; }
  Fit filter(const JobRequest& job, const GpuView& gpu) const override {
    if (gpu.jobs == 0) return Fit::yes();
    if (!job.mem_bytes) return Fit::no(Fit::Why::kMemoryUnknown);
    int64_t shards = (std::max<int64_t>(*job.mem_bytes, 1) + kShardBytes - 1) / kShardBytes;
    if (gpu.mem_free_bytes < shards * kShardBytes) {
      return Fit::no(Fit::Why::kMemory, double(shards * kShardBytes), double(gpu.mem_free_bytes));
    }
    return Fit::yes();
  }
  // The lowest index first, as Slurm's selector walks a node's GPUs.
  double score(const JobRequest&, const GpuView& gpu) const override { return -static_cast<double>(gpu.index); }
};

}  // namespace

std::unique_ptr<Policy> make_slurm_shard_policy(const Thresholds&) { return std::make_unique<SlurmShardPolicy>(); }

}  // namespace colo::sched
