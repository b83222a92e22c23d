#include "colo/sched/job.h"

#include <array>
#include <utility>

namespace colo::sched {
namespace {

constexpr std::array<std::pair<JobState, const char*>, 7> kNames{{
    {JobState::kPending, "PENDING"},
    {JobState::kRunning, "RUNNING"},
    {JobState::kCompleted, "COMPLETED"},
    {JobState::kFailed, "FAILED"},
    {JobState::kOutOfMemory, "OUT_OF_MEMORY"},
    {JobState::kRequeued, "REQUEUED"},
    {JobState::kCancelled, "CANCELLED"},
}};

}  // namespace

std::string to_string(JobState state) {
  for (const auto& [s, name] : kNames) {
    if (s == state) return name;
  }
  return "UNKNOWN";
}

std::optional<JobState> job_state_from_string(const std::string& name) {
  for (const auto& [s, n] : kNames) {
    if (name == n) return s;
  }
  return std::nullopt;
}

std::string job_state_names() {
  std::string names;
  for (const auto& [s, name] : kNames) names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

bool is_final(JobState state) {
  return state == JobState::kCompleted || state == JobState::kFailed || state == JobState::kCancelled;
}

}  // namespace colo::sched
