// The runner's pauses: a settling job's neighbours stopped for a few
// seconds so that its share is measured alone (GpuLedger's probes).

#include <signal.h>

#include <spdlog/spdlog.h>

#include "colo/core/process_tree.h"
#include "colo/sched/runner.h"

namespace colo::sched {
namespace {

// Past this a watchdog continues a pause that colo did not end: a probe
// lasts a few seconds, and a round is never this late.
constexpr double kPauseSlackS = 30;

std::string ids_text(const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

}  // namespace

void Runner::pause(const std::vector<int64_t>& ids) {
  std::vector<pid_t> groups, escaped;
  std::vector<int64_t> pausing;
  for (int64_t id : ids) {
    if (paused_.count(id)) continue;
    for (const Active& a : active_) {
      if (a.id != id || a.pgid == 0) continue;
      groups.push_back(a.pgid);
      pausing.push_back(id);
      // Workers a launcher started in a group or session of their own.
      std::vector<pid_t> own = descendants_outside_group(a.pgid);
      escaped.insert(escaped.end(), own.begin(), own.end());
      paused_outside_[id] = std::move(own);
    }
  }
  if (groups.empty()) return;
  const double limit_s = options_.thresholds.probe_drain_s + options_.thresholds.settle_active_s + kPauseSlackS;
  try {
    auto pause = std::make_shared<PausedGroups>(groups, limit_s, escaped);
    for (int64_t id : pausing) {
      paused_[id] = pause;
      paused_since_[id] = clock_.elapsed_s();
      ++pause_stats_.pauses;
      show_paused_on_simulated(id, true);
    }
    spdlog::info("job(s) {} paused for {:.1f} s: a job beside them is measured alone", ids_text(pausing),
                 options_.thresholds.probe_drain_s + options_.thresholds.settle_active_s);
  } catch (const std::exception& e) {
    for (int64_t id : pausing) paused_outside_.erase(id);
    spdlog::warn("job(s) {} run on unpaused ({}): the share measured beside them counts them too", ids_text(pausing),
                 e.what());
  }
}

void Runner::resume(const std::vector<int64_t>& ids) {
  for (int64_t id : ids) {
    auto it = paused_.find(id);
    if (it == paused_.end()) continue;
    // Its own group now; the pause it shares continues the rest with the last of them.
    for (const Active& a : active_) {
      if (a.id == id && a.pgid != 0) ::kill(-a.pgid, SIGCONT);
    }
    for (pid_t pid : paused_outside_[id]) ::kill(pid, SIGCONT);
    paused_outside_.erase(id);
    paused_.erase(it);
    pause_stats_.paused_job_s += clock_.elapsed_s() - paused_since_[id];
    paused_since_.erase(id);
    show_paused_on_simulated(id, false);
  }
}

}  // namespace colo::sched
