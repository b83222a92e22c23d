#include "colo/sched/policy.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <utility>

#include "colo/core/table.h"
#include "colo/sched/policies.h"

namespace colo::sched {
namespace {

using PolicyFactory = std::function<std::unique_ptr<Policy>(const Thresholds&)>;

// Adding a policy: one file with its class and factory, one entry here.
const std::vector<std::pair<std::string, PolicyFactory>>& registry() {
  static const std::vector<std::pair<std::string, PolicyFactory>> entries = {
      {"exclusive", make_exclusive_policy},
      {"round-robin", make_round_robin_policy},
      {"magm", make_magm_policy},
      {"lug", make_lug_policy},
      {"best-fit", make_best_fit_policy},
      {"slurm-shard", make_slurm_shard_policy},
  };
  return entries;
}

}  // namespace

std::string Fit::reason() const {
  switch (why) {
    case Why::kFits: return "";
    case Why::kGpuSays: return text ? *text : "";
    case Why::kBusyAlone: return "busy: its job runs alone";
    case Why::kMustRunAlone: return "must run alone (OOM recovery), GPU busy";
    case Why::kRecoveryMinimum:
      return "held for recovery: needs " + bytes_human(need) + " free, " + bytes_human(have) + " free";
    case Why::kMemoryUnknown: return "memory unknown: waits for an empty GPU";
    case Why::kProvisional:
      return "memory unknown: joins a busy GPU with at least " + bytes_human(need) + " free, " +
             bytes_human(std::max(have, 0.0)) + " free";
    case Why::kSmActivity: return "SM activity " + fixed(have, 2) + " > " + fixed(need, 2);
    case Why::kMemory:
      return "memory: needs " + bytes_human(need) + " with margin, " + bytes_human(std::max(have, 0.0)) + " free";
    case Why::kSmHeadroom: return "SM headroom: " + fixed(have, 2) + " + " + fixed(need, 2) + " > 1";
    case Why::kExclusiveBusy: return "exclusive: GPU busy";
  }
  return "";
}

Fit common_rules(const JobRequest& job, const GpuView& gpu) {
  if (gpu.held_exclusively) return Fit::no(Fit::Why::kBusyAlone);
  if (job.must_run_alone && gpu.jobs > 0) return Fit::no(Fit::Why::kMustRunAlone);
  if (gpu.jobs > 0 && !gpu.closed_reason.empty()) return Fit::gpu_says(gpu.closed_reason);
  if (gpu.jobs > 0 && job.sm_share <= 0 && !gpu.settling_reason.empty()) return Fit::gpu_says(gpu.settling_reason);
  if (gpu.mem_free_bytes < job.min_free_bytes) {
    return Fit::no(Fit::Why::kRecoveryMinimum, double(job.min_free_bytes), double(gpu.mem_free_bytes));
  }
  return Fit::yes();
}

Fit collocation_thresholds(const JobRequest& job, const GpuView& gpu, const Thresholds& t) {
  if (gpu.jobs == 0) return Fit::yes();  // an empty GPU always takes a job
  if (!job.mem_bytes && !job.provisional) return Fit::no(Fit::Why::kMemoryUnknown);
  if (gpu.sm_activity > t.max_sm_activity && !gpu.grows_past_ceiling) {
    return Fit::no(Fit::Why::kSmActivity, t.max_sm_activity, gpu.sm_activity);
  }
  if (!job.mem_bytes) {
    if (!gpu.provisional_reason.empty()) return Fit::gpu_says(gpu.provisional_reason);
    if (gpu.mem_free_bytes < t.min_provisional_bytes) {
      return Fit::no(Fit::Why::kProvisional, double(t.min_provisional_bytes), double(gpu.mem_free_bytes));
    }
    return Fit::yes();
  }
  const int64_t margin = gpu.sm_activity > t.max_sm_activity
                             ? std::max(t.mem_margin_bytes, t.mem_margin_past_ceiling_bytes)
                             : t.mem_margin_bytes;
  if (gpu.mem_free_bytes < *job.mem_bytes + margin) {
    return Fit::no(Fit::Why::kMemory, double(*job.mem_bytes + margin), double(gpu.mem_free_bytes));
  }
  return Fit::yes();
}

int64_t provisional_reservation(const GpuView& gpu, const Thresholds& t) {
  return std::max<int64_t>(gpu.mem_free_bytes - t.mem_margin_bytes, 0);
}

GpuRoom room_of(const std::vector<GpuView>& gpus, const Thresholds& t) {
  GpuRoom room;
  for (const auto& v : gpus) {
    if (v.jobs == 0) ++room.empty;
    // Over the SM ceiling, a GPU whose activity still grows takes one more
    // job (collocation_thresholds): open to one, as far as may fit.
    bool open = !v.held_exclusively && v.closed_reason.empty() &&
                (v.sm_activity <= t.max_sm_activity || v.grows_past_ceiling);
    if (open) room.most_free_open_bytes = std::max(room.most_free_open_bytes, v.mem_free_bytes);
  }
  return room;
}

bool might_fit(const JobRequest& job, const GpuRoom& room, const Thresholds& t) {
  if (room.empty >= job.gpus) return true;
  if (!job.mem_bytes) return job.provisional && room.most_free_open_bytes >= t.min_provisional_bytes;
  return std::max(*job.mem_bytes + t.mem_margin_bytes, job.min_free_bytes) <= room.most_free_open_bytes;
}

Placement pick_gpus(Policy& policy, const JobRequest& job, const std::vector<GpuView>& gpus, bool explain) {
  if (!explain && job.gpus <= 1) {
    // One GPU, no reasons wanted (the simulator's hot path): the best in one pass.
    const GpuView* best = nullptr;
    double best_score = 0;
    for (const auto& gpu : gpus) {
      Fit fit = common_rules(job, gpu);
      if (fit) fit = policy.filter(job, gpu);
      if (!fit) continue;
      double score = policy.score(job, gpu);
      if (!best || score > best_score || (score == best_score && gpu.index < best->index)) {
        best = &gpu;
        best_score = score;
      }
    }
    Placement placement;
    if (best) {
      placement.gpus.push_back(best->index);
      policy.placed(job, best->index);
    }
    return placement;
  }
  std::vector<std::pair<double, int>> passing;  // (score, index)
  std::string refusals;
  for (const auto& gpu : gpus) {
    Fit fit = common_rules(job, gpu);
    if (fit) fit = policy.filter(job, gpu);
    if (!fit) {
      if (explain) refusals += (refusals.empty() ? "" : "; ") + ("GPU " + std::to_string(gpu.index) + ": " + fit.reason());
      continue;
    }
    passing.emplace_back(policy.score(job, gpu), gpu.index);
  }
  int wanted = std::max(job.gpus, 1);
  Placement placement;
  if (static_cast<int>(passing.size()) < wanted) {
    if (!explain) return placement;
    placement.reason = wanted > 1 ? "needs " + std::to_string(wanted) + " GPUs at once, " +
                                        std::to_string(passing.size()) + " can take it (" + refusals + ")"
                                  : refusals;
    if (placement.reason.empty()) placement.reason = "no GPU";
    return placement;
  }
  std::stable_sort(passing.begin(), passing.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  for (int i = 0; i < wanted; ++i) {
    placement.gpus.push_back(passing[static_cast<size_t>(i)].second);
    policy.placed(job, passing[static_cast<size_t>(i)].second);
  }
  std::sort(placement.gpus.begin(), placement.gpus.end());
  return placement;
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Policy> make_policy(const std::string& name, const Thresholds& thresholds) {
  for (const auto& [n, factory] : registry()) {
    if (n == name) return factory(thresholds);
  }
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown policy \"" + name + "\" (known: " + known + ")");
}

}  // namespace colo::sched
