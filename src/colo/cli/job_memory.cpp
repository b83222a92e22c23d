#include "colo/cli/job_memory.h"

#include <cstdio>
#include <sstream>

#include "colo/core/table.h"
#include "colo/estimate/analytical_estimator.h"
#include "colo/estimate/combined_estimator.h"
#include "colo/estimate/history_estimator.h"

namespace colo::cli {
namespace {

constexpr double kMargin = 0.10;

// The training spec of a `colo train SPEC.toml` command (argv or a shell
// line), relative paths taken from the job's working directory.
std::string train_spec_of(const sched::JobSpec& job) {
  std::vector<std::string> words;
  for (const auto& arg : job.command) {
    std::istringstream in(arg);
    std::string word;
    while (in >> word) words.push_back(word);
  }
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    bool colo = words[i].size() >= 4 && words[i].compare(words[i].size() - 4, 4, "colo") == 0;
    if (colo && words[i + 1] == "train" && i + 2 < words.size()) {
      const std::string& path = words[i + 2];
      if (path.size() > 5 && path.compare(path.size() - 5, 5, ".toml") == 0) {
        return path.front() == '/' ? path : job.workdir + "/" + path;
      }
    }
  }
  return "";
}

}  // namespace

void fill_memory_estimates(std::vector<sched::JobSpec>& specs, const sched::JobStore* history) {
  std::vector<estimate::PastRun> past;
  if (history) {
    for (const auto& record : history->list({sched::JobState::kCompleted})) {
      if (record.peak_mem_bytes) past.push_back({record.spec.command, *record.peak_mem_bytes});
    }
  }
  estimate::CombinedEstimator estimator({std::make_shared<estimate::AnalyticalEstimator>(),
                                         std::make_shared<estimate::HistoryEstimator>(past)},
                                        kMargin);
  for (auto& job : specs) {
    if (job.mem_bytes) continue;
    estimate::EstimateRequest request;
    request.command = job.command;
    std::string spec_path = train_spec_of(job);
    try {
      if (!spec_path.empty()) request.spec = train::parse_train_spec(spec_path);
      if (request.spec && request.spec->device == "cpu") continue;  // needs no GPU memory
      estimate::MemoryEstimate e = estimator.estimate(request);
      if (e.known) {
        job.mem_bytes = e.bytes;
        std::fprintf(stderr, "colo: %s needs about %s (%s)\n", job.name.c_str(),
                     bytes_human(static_cast<double>(e.bytes)).c_str(), e.reason.c_str());
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "colo: %s: memory need unknown (%s)\n", job.name.c_str(), e.what());
    }
  }
}

}  // namespace colo::cli
