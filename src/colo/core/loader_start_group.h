#pragma once
// How colo's scheduler puts the jobs it launches together on one
// shared-loader producer into that producer's start group, whose first
// chunks the producer serves together (data::LoaderServeSpec::
// start_group_wait_s):
// - each job gets $COLO_LOADER_START_GROUP = the producer's ready file
//   (`colo loader serve --ready-file`), which its consumer
//   (data::SharedLoaderClient) sends with its first request;
// - once the scheduler has launched every job it can in that round, it
//   writes start_group_size_file(ready file): how many it launched (a
//   count on the first line) and their job ids (the second line), which the
//   producer waits for; it writes them again as members end.

#include <fstream>
#include <set>
#include <string>

namespace colo {

inline constexpr const char* kLoaderStartGroupVariable = "COLO_LOADER_START_GROUP";
// The job id the scheduler gives every job it launches: a start group
// counts jobs by it, as a job may read through several consumers.
inline constexpr const char* kJobIdVariable = "COLO_JOB_ID";

// Where the size of the start group of the producer whose ready file is
// `ready_file` is written.
inline std::string start_group_size_file(const std::string& ready_file) { return ready_file + ".group"; }

// The count in a start group's size file, or 0 while there is none (not
// written yet) or it holds no positive count.
inline size_t read_start_group_size(const std::string& size_file) {
  std::ifstream in(size_file);
  long long n = 0;
  return in >> n && n > 0 ? static_cast<size_t>(n) : 0;
}

// The job ids a start group's size file names (its second line), empty
// when it names none (only its count is known).
inline std::set<std::string> read_start_group_members(const std::string& size_file) {
  std::ifstream in(size_file);
  std::string count, id;
  std::set<std::string> members;
  if (!std::getline(in, count)) return members;
  while (in >> id) members.insert(id);
  return members;
}

// A start group's size file's text: the count of `job_ids`, then the ids.
template <typename Ids>
std::string start_group_size_text(const Ids& job_ids) {
  std::string text = std::to_string(job_ids.size()) + "\n", separator;
  for (const auto& id : job_ids) {
    text += separator + std::to_string(id);
    separator = " ";
  }
  return text + "\n";
}

}  // namespace colo
