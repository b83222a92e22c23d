#pragma once
// Slurm's own commands (sbatch, squeue, scontrol, sinfo), run as programs and
// their output parsed. Each throws SlurmError with the command's message when
// Slurm refuses or cannot be reached.

#include <stdexcept>
#include <string>
#include <vector>

#include "colo/core/subprocess.h"

namespace colo::slurm {

class SlurmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One line of squeue (array tasks one per line).
struct QueueRow {
  std::string job_id;        // "123", or "123_4" for an array task
  std::string array_job_id;  // "123" for both
  std::string name;
  std::string state;         // PENDING, RUNNING, COMPLETING, ...
  std::string gres;          // "gres:shard:7" as squeue's %b prints it
  std::string reason;        // why it waits, or its node list when it runs
  std::string node;
  std::string comment;
};

// The squeue format colo asks for, and its parser (fields split on '|';
// lines with too few fields are skipped).
extern const char* const kQueueFormat;
std::vector<QueueRow> parse_queue(const std::string& output);

// The job id in `sbatch --parsable` output ("123" or "123;cluster" on a line of its own).
std::string parse_sbatch_id(const std::string& output);

class SlurmClient {
 public:
  // `timeout_s` bounds each command (slurmctld may be restarting).
  explicit SlurmClient(double timeout_s = 30.0) : timeout_s_(timeout_s) {}

  // Submits `script_path` with extra sbatch options (they override the
  // script's #SBATCH lines) and environment; returns the job id.
  std::string submit(const std::string& script_path, const std::vector<std::string>& options,
                     const EnvironmentOverrides& env = {}) const;
  // Every job in the queue (all users).
  std::vector<QueueRow> queue() const;
  // Sets the job's Comment (shown by squeue %k and scontrol show job).
  void set_comment(const std::string& job_id, const std::string& comment) const;
  // `sinfo -h -o %G`: the GRES of each node group.
  std::string node_gres() const;

 private:
  std::string run(const std::vector<std::string>& argv, const EnvironmentOverrides& env = {}) const;
  double timeout_s_;
};

}  // namespace colo::slurm
