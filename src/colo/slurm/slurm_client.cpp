#include "colo/slurm/slurm_client.h"

#include <sstream>

namespace colo::slurm {

const char* const kQueueFormat = "%i|%F|%j|%T|%b|%R|%N|%k";

std::vector<QueueRow> parse_queue(const std::string& output) {
  std::vector<QueueRow> rows;
  std::stringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    std::string field;
    while (std::getline(fields, field, '|')) f.push_back(field);
    if (f.size() < 7) continue;
    f.resize(8);
    rows.push_back({f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]});
  }
  return rows;
}

std::string parse_sbatch_id(const std::string& output) {
  // stderr is merged in: warnings may come before the id's own line.
  std::stringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::string id = line.substr(0, line.find(';'));
    if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) return id;
  }
  throw SlurmError("sbatch: no job id in its answer: " + output);
}

std::string SlurmClient::run(const std::vector<std::string>& argv, const EnvironmentOverrides& env) const {
  ProcessResult result;
  try {
    result = run_process(argv, env, "", timeout_s_);
  } catch (const std::exception& e) {
    throw SlurmError(argv[0] + ": cannot run (" + e.what() + "); is Slurm installed and on PATH?");
  }
  if (result.timed_out) throw SlurmError(argv[0] + ": no answer within " + std::to_string(int(timeout_s_)) + " s");
  if (result.exit_code != 0) {
    std::string message = result.output;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    throw SlurmError(argv[0] + " failed: " + message);
  }
  return result.output;
}

std::string SlurmClient::submit(const std::string& script_path, const std::vector<std::string>& options,
                                const EnvironmentOverrides& env) const {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(script_path);
  return parse_sbatch_id(run(argv, env));
}

std::vector<QueueRow> SlurmClient::queue() const {
  return parse_queue(run({"squeue", "-h", "-r", "-o", kQueueFormat}));
}

void SlurmClient::set_comment(const std::string& job_id, const std::string& comment) const {
  run({"scontrol", "update", "JobId=" + job_id, "Comment=" + comment});
}

std::string SlurmClient::node_gres() const { return run({"sinfo", "-h", "-o", "%G"}); }

}  // namespace colo::slurm
