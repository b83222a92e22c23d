#include "colo/estimate/default_chain.h"

#include <sstream>

#include "colo/estimate/analytical_estimator.h"
#include "colo/estimate/combined_estimator.h"
#include "colo/estimate/python_model_estimator.h"

namespace colo::estimate {

EstimatorPtr default_job_estimator(std::vector<PastRun> history) {
  return std::make_shared<CombinedEstimator>(
      std::vector<EstimatorPtr>{std::make_shared<AnalyticalEstimator>(), std::make_shared<PythonModelEstimator>(),
                                std::make_shared<HistoryEstimator>(std::move(history))},
      kSubmitMargin);
}

std::string train_spec_of(const std::vector<std::string>& command, const std::string& workdir) {
  std::vector<std::string> words;
  for (const auto& arg : command) {
    std::istringstream in(arg);
    std::string word;
    while (in >> word) words.push_back(word);
  }
  for (size_t i = 0; i + 2 < words.size(); ++i) {
    bool colo = words[i].size() >= 4 && words[i].compare(words[i].size() - 4, 4, "colo") == 0;
    const std::string& path = words[i + 2];
    if (colo && words[i + 1] == "train" && path.size() > 5 && path.compare(path.size() - 5, 5, ".toml") == 0) {
      return path.front() == '/' ? path : workdir + "/" + path;
    }
  }
  return "";
}

EstimateRequest job_request(const std::vector<std::string>& command, const std::string& workdir,
                            const std::optional<PythonModelSource>& python_model) {
  EstimateRequest request;
  request.command = command;
  request.workdir = workdir;
  request.python_model = python_model;
  std::string spec_path = train_spec_of(command, workdir);
  if (!spec_path.empty()) request.spec = train::parse_train_spec(spec_path);
  return request;
}

}  // namespace colo::estimate
