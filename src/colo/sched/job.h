#pragma once
// Job states, in the manner of Slurm's.

#include <optional>
#include <string>

namespace colo::sched {

enum class JobState {
  kPending,      // waiting for a GPU
  kRunning,
  kCompleted,    // exited 0
  kFailed,       // exited non-zero (not out of memory), or out of retries
  kOutOfMemory,  // died of GPU out-of-memory; waits in the recovery queue (FAILED past the retry limit)
  kRequeued,     // lost its process (daemon restart, GPU gone); waits again
  kCancelled,
};

// "PENDING", "RUNNING", "COMPLETED", "FAILED", "OUT_OF_MEMORY", "REQUEUED", "CANCELLED".
std::string to_string(JobState state);
std::optional<JobState> job_state_from_string(const std::string& name);
// Every state's name, in the order above, joined by ", " (for messages).
std::string job_state_names();

// True for states a job never leaves.
bool is_final(JobState state);

}  // namespace colo::sched
