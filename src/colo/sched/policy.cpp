#include "colo/sched/policy.h"

#include <functional>
#include <stdexcept>
#include <utility>

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
  };
  return entries;
}

}  // namespace

bool passes_common_rules(const JobRequest& job, const GpuView& gpu) {
  if (gpu.held_exclusively) return false;
  if (job.must_run_alone && gpu.jobs > 0) return false;
  return gpu.mem_free_bytes >= job.min_free_bytes;
}

bool passes_collocation_thresholds(const JobRequest& job, const GpuView& gpu, const Thresholds& t) {
  if (gpu.jobs == 0) return true;  // an empty GPU always takes a job
  if (!job.mem_bytes) return false;
  return gpu.sm_activity <= t.max_sm_activity && gpu.mem_free_bytes >= *job.mem_bytes + t.mem_margin_bytes;
}

std::optional<int> pick_gpu(Policy& policy, const JobRequest& job, const std::vector<GpuView>& gpus) {
  std::optional<int> best;
  double best_score = 0;
  for (const auto& gpu : gpus) {
    if (!passes_common_rules(job, gpu) || !policy.filter(job, gpu)) continue;
    double score = policy.score(job, gpu);
    if (!best || score > best_score || (score == best_score && gpu.index < *best)) {
      best = gpu.index;
      best_score = score;
    }
  }
  if (best) policy.placed(job, *best);
  return best;
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
