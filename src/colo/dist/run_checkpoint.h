#pragma once
// colo dist's checkpoints, in OUTPUT/checkpoint/: one file per worker and
// step (`rank<R>-step<S>.ckpt`) and `latest.json`, which names the step of
// the last checkpoint that every worker finished. Worker 0 writes
// latest.json only once all workers have written theirs (the caller's
// barrier), so a run killed at any moment resumes from its last complete
// checkpoint, never from a mix of steps.

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

namespace colo::dist {

// What one worker saves: its loop's counters and positions, and tensors.
struct WorkerCheckpoint {
  nlohmann::json values = nlohmann::json::object();
  std::vector<at::Tensor> tensors;  // read back on the CPU, in the order written
};

// OUTPUT/checkpoint.
std::string checkpoint_directory(const std::string& output);

// OUTPUT/checkpoint/rank<R>-step<S>.ckpt.
std::string worker_checkpoint_file(const std::string& output, int rank, int64_t step);

// Writes worker `rank`'s checkpoint of `step` atomically (float32, float64,
// int64, int32 and uint8 tensors, any device). Throws std::runtime_error on
// an I/O failure and std::invalid_argument for another tensor type.
void write_worker_checkpoint(const std::string& output, int rank, int64_t step,
                             const WorkerCheckpoint& checkpoint);

// Makes `step` the run's checkpoint: worker 0 calls it once every worker has
// written its file of that step. `run` (its strategy, workers, parameters)
// is kept for the resume to check against.
void commit_checkpoint(const std::string& output, int64_t step, const nlohmann::json& run);

// Removes worker `rank`'s files of every step but `keep` (older ones and
// any a killed run wrote after its last commit).
void remove_other_checkpoints(const std::string& output, int rank, int64_t keep);

// Whether a checkpoint was committed in `output` (latest.json exists).
bool has_committed_checkpoint(const std::string& output);

// latest.json: {"step", "run"}; throws InputError naming it when there is
// none ("no checkpoint to resume from") or it is malformed.
nlohmann::json committed_checkpoint(const std::string& output);

// Worker `rank`'s file of `step`; throws InputError naming the file when it
// is missing, truncated or malformed.
WorkerCheckpoint read_worker_checkpoint(const std::string& output, int rank, int64_t step);

}  // namespace colo::dist
