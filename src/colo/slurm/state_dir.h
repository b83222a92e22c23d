#pragma once
// colo's own records of the jobs it handed to Slurm, in one directory that
// the submitting host and the nodes share (the jobs' working file system):
//
//   DIR/submitted.jsonl        one line per sbatch colo made (first attempts and retries)
//   DIR/attempts/ID.json       one file per Slurm job (or array task) that colo slurm exec ran
//   DIR/scripts/NAME.sh        the batch script of each job, resubmitted on OOM retries
//   DIR/logs/                  the jobs' Slurm output files
//
// Slurm forgets finished jobs (MinJobAge) and keeps no GPU columns; these
// files keep colo's: memory asked for, peak, energy, OOM retries.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace colo::slurm {

// One sbatch that colo made.
struct SubmittedJob {
  std::string slurm_id;                       // "123" (a job array's id for arrays)
  std::string name;
  std::string gres;                           // "shard:7", "gpu:1"
  std::optional<int64_t> mem_bytes;           // per GPU; nullopt = unknown (whole GPU)
  std::optional<std::pair<int, int>> array;
  int attempt = 1;
  std::string retry_of;                       // the Slurm id this retries ("" for a first attempt)
  double submit_unix = 0;
};

// What colo slurm exec saw of one Slurm job (or array task).
struct AttemptRecord {
  std::string slurm_id;                       // "123" or "123_4"
  std::string name;
  int attempt = 1;
  std::string retry_of;
  std::vector<std::string> command;
  std::string workdir;
  std::string gres;
  std::optional<int64_t> mem_bytes;           // the pinned-memory limit it ran under
  std::string node;
  std::string gpus;                           // CUDA_VISIBLE_DEVICES Slurm gave it
  bool mps = false;                           // ran as a client of the node's MPS daemon
  std::string state = "RUNNING";              // RUNNING, COMPLETED, OUT_OF_MEMORY (retried), FAILED
  std::optional<int> exit_code;
  std::optional<int64_t> peak_bytes;          // largest GPU memory its processes held
  std::optional<double> energy_j;             // its share of its GPUs' energy (NVML counter)
  std::string retried_as;                     // the Slurm id of its OOM retry
  std::string reason;                         // why it failed or was retried
  double start_unix = 0;
  double end_unix = 0;
};

nlohmann::json to_json(const SubmittedJob& job);
nlohmann::json to_json(const AttemptRecord& record);
AttemptRecord attempt_from_json(const nlohmann::json& j);
SubmittedJob submitted_from_json(const nlohmann::json& j);

class StateDir {
 public:
  // Creates the directory and its parts if missing. Throws InputError when
  // it cannot be written.
  explicit StateDir(std::string path);
  const std::string& path() const { return path_; }

  // The batch script of job `name` (its name made safe for a file name).
  std::string script_path(const std::string& name) const;
  void append_submitted(const SubmittedJob& job) const;
  // Every sbatch recorded, in order. A malformed line is skipped with a warning.
  std::vector<SubmittedJob> submitted() const;
  // Writes (atomically) the record of one attempt, replacing an earlier one.
  void write_attempt(const AttemptRecord& record) const;
  std::vector<AttemptRecord> attempts() const;

 private:
  std::string path_;
};

}  // namespace colo::slurm
